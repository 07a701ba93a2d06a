import type { LedgerEvent } from "../ledger/ledger.ts";
import { genAiProvider } from "./gen-ai-provider.ts";
import type { Attributes, SpanEventRecord, SpanRecord } from "./span-record.ts";
import { agentSpanId, chatSpanId, runSpanId, toolSpanId, traceIdOf, turnSpanId } from "./trace-ids.ts";

/** How the fold shapes spans (from `TraceConfig`). */
export interface SpanFoldOptions {
  /** Prompts, outputs, tool arguments and results, steer messages on spans. */
  captureContent: boolean;
  /** Only the latest GenAI attribute names (no `gen_ai.system` beside `gen_ai.provider.name`). */
  latestOnly: boolean;
  /** Span events kept per span (the newest); the rest are counted as dropped. */
  eventCount: number;
  /** An agent's stored result text (read at its `handle_settled`, for the turn's output). */
  readResult(agentId: string): string | null;
}

/** Tool calls open at once per agent that are tracked; a harness sending starts without ends cannot grow the daemon. */
export const MAX_OPEN_TOOLS = 256;
/** Prompts kept per agent for its next turns (an operator may queue several behind a busy turn). */
const MAX_QUEUED_PROMPTS = 16;
/** Longest tool or model name put in a span name. */
const MAX_NAME = 64;

interface OpenTool {
  name: string;
  startAt: number;
  args?: string;
}

interface OpenTurn {
  /** Its span's id (`turnSpanId` of the agent's turn number). */
  spanId: string;
  startAt: number;
  input?: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** What the fold knows of one live agent: enough to build its spans when they end. */
interface AgentTrack {
  runId: string;
  agentId: string;
  traceId: string;
  spanId: string;
  name: string;
  parentSpanId: string;
  startAt: number;
  depth: number;
  forkLink?: { spanId: string; turn: number; toolCallId?: string; from: string };
  node?: string;
  provider?: string;
  model?: string;
  /** Turns settled so far: the next turn is `settled + 1`. */
  settled: number;
  turn?: OpenTurn;
  /** Prompts of the turns to come, in order (the spawn prompt, those `prompted` told of); at most `MAX_QUEUED_PROMPTS`. */
  inputs: string[];
  tools: Map<string, OpenTool>;
  events: SpanEventRecord[];
  droppedEvents: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** Ledger events that become a span event on the agent's span, as they are. */
const AGENT_SPAN_EVENTS: ReadonlySet<string> = new Set([
  "agent_provisioned",
  "agent_state_changed",
  "agent_steered",
  "agent_hibernated",
  "agent_woke",
  "agent_draining",
  "agent_forked",
  "changes_adopted",
  "agent_unreachable",
  "agent_reachable",
  "permission_request",
  "permission_resolved",
  "budget_denied",
  "budget_changed",
  "tool_refused",
  "compaction_start",
  "compaction_end",
  "auto_retry_start",
  "auto_retry_end",
  "extension_error",
]);

/**
 * Ledger events in, finished spans out (docs/tracing.md): the run's span at `run_started`, an
 * agent's `create_agent` span at its `agent_ended`, a turn's `invoke_agent` span at its
 * `handle_settled`, a tool call's `execute_tool` span at its `tool_end`, a model call's `chat`
 * span at its `model_usage`. Spans are only ever built when they end, from what the ledger says
 * (start times included), so folding a ledger again after a restart (`apply` with the output
 * dropped) picks up open spans exactly where they were. Pure: no clock, no IO but `readResult`.
 */
export class SpanFold {
  readonly #agents = new Map<string, AgentTrack>();

  constructor(private readonly options: SpanFoldOptions) {}

  /** Agents whose span is open (for tests and the daemon's own bookkeeping). */
  get openAgents(): number {
    return this.#agents.size;
  }

  /** A prompt the operator sent the agent: the input of its next turn (or of the one just begun). */
  prompted(agentId: string, text: string): void {
    const track = this.#agents.get(agentId);
    if (!track || !this.options.captureContent) return;
    if (track.turn && track.turn.input === undefined) track.turn.input = text;
    else if (track.inputs.length < MAX_QUEUED_PROMPTS) track.inputs.push(text);
  }

  apply(e: LedgerEvent): SpanRecord[] {
    if (e.type === "run_started") return [this.#runSpan(e)];
    if (e.agentId === null) return [];
    if (e.type === "agent_spawned") {
      this.#spawned(e, e.agentId);
      return [];
    }
    const track = this.#agents.get(e.agentId);
    if (!track) return [];
    const data = e.data;
    switch (e.type) {
      case "agent_start":
        this.#openTurn(track, e.at);
        return [];
      case "tool_start": {
        const id = str(data.toolCallId);
        if (id === undefined || (track.tools.size >= MAX_OPEN_TOOLS && !track.tools.has(id))) return [];
        this.#openTurn(track, e.at);
        const tool: OpenTool = { name: clip(str(data.toolName) ?? "tool"), startAt: e.at };
        if (this.options.captureContent) tool.args = JSON.stringify(data.args ?? {});
        track.tools.set(id, tool);
        return [];
      }
      case "tool_end": {
        const id = str(data.toolCallId);
        const tool = id === undefined ? undefined : track.tools.get(id);
        if (id === undefined || !tool) return [];
        track.tools.delete(id);
        const failed = data.isError === true;
        const output = this.options.captureContent ? str(data.output) : undefined;
        return [
          this.#toolSpan(
            track,
            id,
            tool,
            e.at,
            failed ? { code: "error", message: "the tool failed" } : { code: "ok" },
            output,
          ),
        ];
      }
      case "model_usage":
        return [this.#chatSpan(track, e)];
      case "handle_settled":
        return this.#closeTurn(track, e.at, str(data.outcome) ?? "success", null);
      case "agent_ended":
        return this.#ended(track, e);
      default:
        if (AGENT_SPAN_EVENTS.has(e.type))
          this.#addEvent(track, { name: e.type, at: e.at, attributes: this.#eventAttributes(e) });
        return [];
    }
  }

  #runSpan(e: LedgerEvent): SpanRecord {
    return {
      name: "swarmd.run",
      kind: "internal",
      traceId: traceIdOf(e.runId),
      spanId: runSpanId(e.runId),
      startAt: e.at,
      endAt: e.at,
      attributes: { "swarmd.run.id": e.runId },
      events: [],
      droppedEvents: 0,
      links: [],
      status: { code: "unset" },
    };
  }

  #spawned(e: LedgerEvent, agentId: string): void {
    const data = e.data;
    const parent = str(data.parentAgentId);
    const track: AgentTrack = {
      runId: e.runId,
      agentId,
      traceId: traceIdOf(e.runId),
      spanId: agentSpanId(agentId),
      name: clip(str(data.specName) ?? "agent"),
      parentSpanId: parent === undefined ? runSpanId(e.runId) : agentSpanId(parent),
      startAt: e.at,
      depth: typeof data.depth === "number" ? data.depth : 0,
      settled: 0,
      inputs: [],
      tools: new Map(),
      events: [],
      droppedEvents: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
    };
    const prompt = str(data.prompt);
    if (this.options.captureContent && prompt !== undefined) track.inputs.push(prompt);
    const forked = data.forkedFrom as
      | { agentId?: unknown; forkPoint?: { turn?: unknown; toolCallId?: unknown } }
      | undefined;
    const from = str(forked?.agentId);
    const turn = forked?.forkPoint?.turn;
    if (from !== undefined && typeof turn === "number") {
      const toolCallId = str(forked?.forkPoint?.toolCallId);
      // The point it was forked at: the spawn_agent call inside a turn, or the turn it was forked after.
      const spanId =
        toolCallId !== undefined ? toolSpanId(from, toolCallId) : turn > 0 ? turnSpanId(from, turn) : agentSpanId(from);
      track.forkLink = { spanId, turn, from, ...(toolCallId !== undefined ? { toolCallId } : {}) };
    }
    this.#agents.set(agentId, track);
  }

  #openTurn(track: AgentTrack, at: number): void {
    if (track.turn) return;
    track.turn = {
      spanId: turnSpanId(track.agentId, track.settled + 1),
      startAt: at,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
    };
    track.turn.input = track.inputs.shift();
  }

  /** The span a turn's tool and model calls hang under: the open turn's, else the agent's. */
  #callParent(track: AgentTrack): string {
    return track.turn?.spanId ?? track.spanId;
  }

  #toolSpan(
    track: AgentTrack,
    toolCallId: string,
    tool: OpenTool,
    endAt: number,
    status: SpanRecord["status"],
    output: string | undefined,
  ): SpanRecord {
    const attributes: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool.name,
      "gen_ai.tool.call.id": toolCallId,
      "gen_ai.tool.type": "function",
      "gen_ai.agent.id": track.agentId,
    };
    if (tool.args !== undefined) attributes["gen_ai.tool.call.arguments"] = tool.args;
    if (output !== undefined) attributes["gen_ai.tool.call.result"] = output;
    if (status.code === "error")
      attributes["error.type"] = status.message === "the tool failed" ? "tool_error" : "aborted";
    return this.#span(track, {
      name: `execute_tool ${tool.name}`,
      kind: "internal",
      spanId: toolSpanId(track.agentId, toolCallId),
      parentSpanId: this.#callParent(track),
      startAt: tool.startAt,
      endAt,
      attributes,
      status,
    });
  }

  #chatSpan(track: AgentTrack, e: LedgerEvent): SpanRecord {
    const d = e.data;
    const num = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
    const provider = str(d.provider) ?? "unknown";
    const model = clip(str(d.model) ?? "unknown");
    const input = num(d.inputTokens);
    const cacheRead = num(d.cacheReadTokens);
    const cacheWrite = num(d.cacheWriteTokens);
    const output = num(d.outputTokens);
    const cost = num(d.costUsd);
    const heldMs = num(d.heldMs);
    track.provider ??= provider;
    track.model ??= model;
    // A model call counts toward the turn it is part of; one outside any turn toward the agent only.
    this.#openTurnIfNone(track, e.at - num(d.durationMs) - heldMs);
    if (track.turn) {
      track.turn.inputTokens += input + cacheRead + cacheWrite;
      track.turn.outputTokens += output;
      track.turn.costUsd += cost;
    }
    track.inputTokens += input + cacheRead + cacheWrite;
    track.outputTokens += output;
    track.costUsd += cost;
    const attributes: Attributes = {
      "gen_ai.operation.name": "chat",
      ...this.#provider(provider),
      "gen_ai.request.model": model,
      "gen_ai.response.model": model,
      "gen_ai.conversation.id": track.agentId,
      "gen_ai.agent.id": track.agentId,
      // The GenAI conventions count cached input in `input_tokens`, and name the cached parts.
      "gen_ai.usage.input_tokens": input + cacheRead + cacheWrite,
      "gen_ai.usage.output_tokens": output,
      "gen_ai.usage.cache_read.input_tokens": cacheRead,
      "gen_ai.usage.cache_creation.input_tokens": cacheWrite,
      "swarmd.cost_usd": cost,
      "swarmd.held_ms": heldMs,
      "swarmd.usage_known": d.usageKnown !== false,
    };
    const callId = str(d.callId) ?? String(e.seq);
    return this.#span(track, {
      name: `chat ${model}`,
      kind: "client",
      spanId: chatSpanId(track.agentId, callId),
      parentSpanId: this.#callParent(track),
      startAt: e.at - num(d.durationMs) - heldMs,
      endAt: e.at,
      attributes,
      status: { code: "ok" },
    });
  }

  /** A model call arriving when no turn is open starts one only if the harness is mid-turn (it had no agent_start yet). */
  #openTurnIfNone(track: AgentTrack, at: number): void {
    if (!track.turn && track.tools.size > 0) this.#openTurn(track, at);
  }

  /** `handle_settled` (or the agent's end): the open turn's span, and the spans of its tool calls still open. */
  #closeTurn(track: AgentTrack, at: number, outcome: string, endError: string | null): SpanRecord[] {
    const spans: SpanRecord[] = [];
    for (const [id, tool] of track.tools) {
      spans.push(
        this.#toolSpan(
          track,
          id,
          tool,
          at,
          { code: "error", message: `the turn ended (${outcome}) before the tool did` },
          undefined,
        ),
      );
    }
    track.tools.clear();
    const turn = track.turn ?? {
      spanId: turnSpanId(track.agentId, track.settled + 1),
      startAt: at,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
    };
    const attributes: Attributes = {
      ...this.#agentAttributes(track, "invoke_agent", turn),
      "gen_ai.conversation.id": track.agentId,
      "swarmd.turn": track.settled + 1,
      "swarmd.outcome": outcome,
    };
    if (this.options.captureContent) {
      if (turn.input !== undefined) attributes["gen_ai.input.messages"] = messages("user", turn.input);
      const output = endError === null ? this.options.readResult(track.agentId) : null;
      if (output !== null) attributes["gen_ai.output.messages"] = messages("assistant", output);
    }
    const failed = isFailure(outcome);
    if (failed) attributes["error.type"] = outcome;
    spans.push(
      this.#span(track, {
        name: `invoke_agent ${track.name}`,
        kind: "client",
        spanId: turn.spanId,
        parentSpanId: track.spanId,
        startAt: turn.startAt,
        endAt: at,
        attributes,
        status: failed ? { code: "error", message: endError ?? `the turn ended ${outcome}` } : { code: "ok" },
      }),
    );
    track.turn = undefined;
    track.settled += 1;
    return spans;
  }

  #ended(track: AgentTrack, e: LedgerEvent): SpanRecord[] {
    this.#agents.delete(track.agentId);
    const outcome = str(e.data.outcome) ?? "failed";
    const error = str(e.data.error) ?? null;
    // A turn cut short by the agent's end (a stop, a loss) ends with it.
    const spans =
      track.turn || track.tools.size > 0
        ? this.#closeTurn(track, e.at, outcome, error ?? `the agent ended ${outcome}`)
        : [];
    const attributes: Attributes = {
      ...this.#agentAttributes(track, "create_agent", track),
      "swarmd.run.id": track.runId,
      "swarmd.agent.depth": track.depth,
      "swarmd.turns": track.settled,
      "swarmd.outcome": outcome,
    };
    const reason = str(e.data.reason);
    if (reason !== undefined) attributes["swarmd.end_reason"] = reason;
    if (track.node !== undefined) attributes["swarmd.node"] = track.node;
    const failed = isFailure(outcome);
    if (failed) attributes["error.type"] = outcome;
    const links = track.forkLink
      ? [
          {
            traceId: track.traceId,
            spanId: track.forkLink.spanId,
            attributes: {
              "swarmd.forked_from": track.forkLink.from,
              "swarmd.fork.turn": track.forkLink.turn,
              ...(track.forkLink.toolCallId ? { "swarmd.fork.tool_call_id": track.forkLink.toolCallId } : {}),
            },
          },
        ]
      : [];
    spans.push({
      ...this.#span(track, {
        name: `create_agent ${track.name}`,
        kind: "client",
        spanId: track.spanId,
        parentSpanId: track.parentSpanId,
        startAt: track.startAt,
        endAt: e.at,
        attributes,
        status: failed ? { code: "error", message: error ?? `the agent ended ${outcome}` } : { code: "ok" },
      }),
      events: track.events,
      droppedEvents: track.droppedEvents,
      links,
    });
    return spans;
  }

  #span(
    track: AgentTrack,
    s: Pick<SpanRecord, "name" | "kind" | "spanId" | "parentSpanId" | "startAt" | "endAt" | "attributes" | "status">,
  ): SpanRecord {
    return { ...s, traceId: track.traceId, events: [], droppedEvents: 0, links: [] };
  }

  /** What an agent's and a turn's spans both say: the operation, the agent, its model, and `usage`'s sums. */
  #agentAttributes(
    track: AgentTrack,
    operation: "create_agent" | "invoke_agent",
    usage: { inputTokens: number; outputTokens: number; costUsd: number },
  ): Attributes {
    return {
      "gen_ai.operation.name": operation,
      "gen_ai.agent.name": track.name,
      "gen_ai.agent.id": track.agentId,
      ...(track.provider ? this.#provider(track.provider) : {}),
      ...(track.model ? { "gen_ai.request.model": track.model } : {}),
      "gen_ai.usage.input_tokens": usage.inputTokens,
      "gen_ai.usage.output_tokens": usage.outputTokens,
      "swarmd.cost_usd": usage.costUsd,
    };
  }

  /** `gen_ai.provider.name`, and the older `gen_ai.system` unless only the latest names are asked for. */
  #provider(provider: string): Attributes {
    const name = genAiProvider(provider);
    return this.options.latestOnly
      ? { "gen_ai.provider.name": name }
      : { "gen_ai.provider.name": name, "gen_ai.system": name };
  }

  #addEvent(track: AgentTrack, event: SpanEventRecord): void {
    if (event.name === "agent_provisioned" && typeof event.attributes["swarmd.node"] === "string") {
      track.node = event.attributes["swarmd.node"];
    }
    track.events.push(event);
    if (track.events.length > this.options.eventCount) {
      track.events.shift();
      track.droppedEvents += 1;
    }
  }

  /** A span event's attributes: the event's own scalar facts as `swarmd.*`; message text only when content is captured. */
  #eventAttributes(e: LedgerEvent): Attributes {
    const attributes: Attributes = { "swarmd.seq": e.seq };
    for (const [key, value] of Object.entries(e.data)) {
      if (key === "hseq" || key === "harnessAt") continue;
      if (!this.options.captureContent && CONTENT_FIELDS.has(key)) continue;
      const name = `swarmd.${snake(key)}`;
      if (typeof value === "string") attributes[name] = value;
      else if (typeof value === "number" && Number.isFinite(value)) attributes[name] = value;
      else if (typeof value === "boolean") attributes[name] = value;
      else if (Array.isArray(value) && value.every((v) => typeof v === "string")) attributes[name] = value;
      else if (value !== null && value !== undefined) attributes[name] = JSON.stringify(value);
    }
    return attributes;
  }
}

/** Fields of span events that carry what an agent or operator wrote: only with content capture. */
const CONTENT_FIELDS: ReadonlySet<string> = new Set(["message", "args", "sessionStats", "files"]);

/** Outcomes that make a span's status an error (a stop, `aborted`, is not one). */
const isFailure = (outcome: string): boolean =>
  outcome === "failed" || outcome === "lost" || outcome === "budget-exceeded";
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const clip = (name: string): string => (name.length > MAX_NAME ? name.slice(0, MAX_NAME) : name);
const snake = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `gen_ai.input.messages` / `gen_ai.output.messages`: the GenAI conventions' JSON message list. */
function messages(role: "user" | "assistant", text: string): string {
  return JSON.stringify([
    { role, parts: [{ type: "text", content: text }], ...(role === "assistant" ? { finish_reason: "stop" } : {}) },
  ]);
}
