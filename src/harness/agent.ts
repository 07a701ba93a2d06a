import { join } from "node:path";
import type { Duplex } from "node:stream";
import {
  type AgentSession,
  AuthStorage,
  createAgentSession,
  createExtensionRuntime,
  type Extension,
  ModelRegistry,
  type ResourceLoader,
  SessionManager,
  type SessionStats,
  SettingsManager,
  type ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { TOOL_NAMES } from "../spec/tool-names.ts";
import { type AgentUser, agentUserTools } from "./agent-user.ts";
import { approvalGate } from "./approval-gate.ts";
import { toWireEvent } from "./event-map.ts";
import { prepareForkedSession } from "./fork-session.ts";
import type { HostCalls } from "./host-calls.ts";
import { createHostTools } from "./host-tools.ts";
import { gatewayModel } from "./model.ts";
import { HarnessError, type HarnessEventType, type TurnSettledData } from "./protocol.ts";

const DEFAULT_SYSTEM_PROMPT =
  "You are a coding agent working in /work, a sandbox of your own. Results of agents you were told to wait for are in /inputs. " +
  "You can start child agents with spawn_agent and collect their results with await_result.";

/** The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface HarnessAgentOptions {
  spec: AgentSpec;
  /** The control folder: the model the daemon chose (`model.json`) and its gateway socket (`model.sock`). */
  controlDir: string;
  workDir: string;
  /** Folder for pi's own files (settings, auth); nothing is read from the user's ~/.pi. */
  agentDir: string;
  host: HostCalls;
  emit: (event: HarnessEventType, data: Record<string, unknown>) => void;
  /** The user the agent's tools run as, when the harness runs as another (an isolated sandbox). */
  agentUser?: AgentUser;
  /** How a model call connects to the gateway when no `model.sock` is there to open (the harness in stdio mode): a new connection each time. */
  dialModel?: () => Duplex;
  /** Tools that replace pi's own of the same name (the memory runtime's bash, read, write and edit on its in-memory files). */
  tools?: ToolDefinition[];
  /**
   * Where the conversation is kept. Default: pi's session file under `<agentDir>/sessions`,
   * continued when one is there, so a harness started again after hibernation (or a crash) goes
   * on with the same history. The memory runtime hands in a session it keeps across starts.
   */
  sessionManager?: SessionManager;
}

/** One agent: a pi coding-agent session driven turn by turn. */
export interface HarnessAgent {
  /** Start a turn, or queue it behind the running one. Never throws: failures settle the turn. */
  prompt(text: string): { queued: boolean };
  /** Deliver a message to the running turn after its running tool calls finish. */
  steer(text: string): Promise<void>;
  /** Abort the running turn (and its tool processes); resolves when the session is idle. */
  abort(): Promise<void>;
  stats(): SessionStats;
  /** `loaded`: pi's session exists (a lazy harness makes it at the first command that needs it). */
  state(): { busy: boolean; queued: number; loaded?: boolean };
  dispose(): void;
}

export async function createHarnessAgent(options: HarnessAgentOptions): Promise<HarnessAgent> {
  const { spec, workDir, emit } = options;
  const authStorage = AuthStorage.inMemory();
  const modelRegistry = ModelRegistry.inMemory(authStorage);
  const { model, release } = gatewayModel(options.controlDir, authStorage, options.dialModel);
  const sessionManager = options.sessionManager ?? fileSession(options.controlDir, options.agentDir, workDir);
  const { session } = await createAgentSession({
    cwd: workDir,
    agentDir: options.agentDir,
    model,
    thinkingLevel: "off",
    authStorage,
    modelRegistry,
    resourceLoader: minimalResources(
      spec.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
      approvalGate(spec.approve ?? [], options.host),
    ),
    tools: [...(spec.tools ?? TOOL_NAMES)],
    customTools: [
      ...createHostTools(options.host, {
        recorded: (toolCallId, signal) => untilRecorded(sessionManager, toolCallId, signal),
      }),
      ...(options.agentUser ? agentUserTools(workDir, options.agentUser, spec.tools ?? TOOL_NAMES) : []),
      ...(options.tools ?? []),
    ],
    sessionManager,
    settingsManager: SettingsManager.inMemory({
      compaction: { enabled: true },
      // The gateway may hold a call for hours (a spend budget, a provider's back-off): no client-side timeout.
      retry: { enabled: true, maxRetries: 3, provider: { timeoutMs: MAX_TIMER_MS } },
    }),
  });
  const unsubscribe = session.subscribe((event) => {
    const wire = toWireEvent(event);
    if (wire) emit(wire.event, wire.data);
  });

  const queue: string[] = [];
  let busy = false;

  const runTurn = async (text: string): Promise<void> => {
    busy = true;
    const start = session.messages.length;
    let error: string | undefined;
    try {
      await session.prompt(text);
      await untilIdle(session);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    emit("turn_settled", { ...settle(session.messages.slice(start), error) });
    const next = queue.shift();
    if (next === undefined) busy = false;
    else void runTurn(next);
  };

  return {
    prompt(text) {
      // Logged so that a restarted service can count the turns this harness owes it.
      emit("prompt_accepted", { queued: busy });
      if (busy) {
        queue.push(text);
        return { queued: true };
      }
      void runTurn(text);
      return { queued: false };
    },
    async steer(text) {
      if (!busy) throw new HarnessError("NO_TURN_RUNNING", "no turn is running");
      await session.steer(text);
    },
    async abort() {
      queue.length = 0;
      await session.abort();
    },
    stats: () => session.getSessionStats(),
    state: () => ({ busy, queued: queue.length }),
    dispose() {
      unsubscribe();
      session.dispose();
      release();
    },
  };
}

/**
 * pi's session file under `<agentDir>/sessions`, continued when one is there; a fork child's is
 * first made from the fork files the daemon left (`prepareForkedSession`).
 */
function fileSession(controlDir: string, agentDir: string, workDir: string): SessionManager {
  const sessionDir = join(agentDir, "sessions");
  prepareForkedSession(controlDir, sessionDir, workDir);
  return SessionManager.continueRecent(workDir, sessionDir);
}

/**
 * Resolves once the session holds the assistant answer that made the call `toolCallId`. pi records
 * an answer from its event queue a few microtasks after the answer ended and its tools started;
 * this waits that out (at most a few seconds: a call that was never recorded is forked from what is).
 */
async function untilRecorded(sessions: SessionManager, toolCallId: string, signal?: AbortSignal): Promise<void> {
  const holds = (entry: ReturnType<SessionManager["getEntries"]>[number]) =>
    entry.type === "message" &&
    entry.message.role === "assistant" &&
    entry.message.content.some((block) => block.type === "toolCall" && block.id === toolCallId);
  for (let tries = 0; tries < 500 && !signal?.aborted; tries++) {
    const leaf = sessions.getLeafEntry();
    if (leaf && sessions.getBranch(leaf.id).some(holds)) return;
    await new Promise((resolve) => setTimeout(resolve, tries < 50 ? 0 : 10));
  }
}

/**
 * A turn is over only when the session is idle: a failed model call can end the agent run and
 * then start an automatic retry with a new `agent_start`.
 */
async function untilIdle(session: AgentSession): Promise<void> {
  for (;;) {
    await session.agent.waitForIdle();
    if (!session.isStreaming && !session.isRetrying) return;
    await new Promise<void>((resolve) => {
      const off = session.subscribe((e) => {
        if (e.type === "agent_end" || e.type === "auto_retry_end") {
          off();
          resolve();
        }
      });
    });
  }
}

type AgentMessage = AgentSession["messages"][number];

/** The turn's outcome and final text: the newest assistant text of the turn, or null. */
function settle(turn: AgentMessage[], error: string | undefined): TurnSettledData {
  let text: string | null = null;
  let stopReason: string | undefined;
  let errorMessage = error;
  for (let i = turn.length - 1; i >= 0; i--) {
    const message = turn[i];
    if (!message || !("role" in message) || message.role !== "assistant") continue;
    stopReason ??= message.stopReason;
    errorMessage ??= message.errorMessage;
    const joined = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    if (joined.length > 0) {
      text = joined;
      break;
    }
  }
  if (error !== undefined || stopReason === "error")
    return { outcome: "failed", text, error: errorMessage ?? "the turn failed" };
  if (stopReason === "aborted") return { outcome: "aborted", text };
  return { outcome: "success", text };
}

/** No skills, prompts, themes or context files; the only extension is swarmd's own approval gate, when the policy has rules. */
function minimalResources(systemPrompt: string, gate: Extension | undefined): ResourceLoader {
  const runtime = createExtensionRuntime();
  return {
    getExtensions: () => ({ extensions: gate ? [gate] : [], errors: [], runtime }),
    getSkills: () => ({ skills: [], diagnostics: [] }),
    getPrompts: () => ({ prompts: [], diagnostics: [] }),
    getThemes: () => ({ themes: [], diagnostics: [] }),
    getAgentsFiles: () => ({ agentsFiles: [] }),
    getSystemPrompt: () => systemPrompt,
    getAppendSystemPrompt: () => [],
    extendResources: () => {},
    reload: async () => {},
  };
}
