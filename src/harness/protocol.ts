/**
 * The harness wire protocol: JSON lines (LF-framed only) over the sandbox's Unix socket.
 *
 * Client → harness: `hello` (first, names the last event it has), commands in the manner of pi's
 * RPC mode, and `host_result` answers to the harness's `host_call`s.
 * Harness → client: `response` to each command, `event` lines numbered by a gap-free `hseq`, and
 * `host_call`s for the tools that need the service (`spawn_agent`, `await_result`).
 */

/** Names of the files in a sandbox's control folder. */
export const CONTROL_FILES = {
  socket: "harness.sock",
  eventLog: "events.jsonl",
  spec: "spec.json",
  pid: "harness.pid",
  output: "harness.out",
  /** The daemon's model gateway for this sandbox, and the model the harness is to call through it. */
  modelSocket: "model.sock",
  model: "model.json",
  /** What a pooled harness takes on when its agent is made: its run's users, the spec's env (src/harness/pool-take.ts). */
  take: "take.json",
} as const;

/** Longest accepted line from a client; longer lines are discarded and answered with an error. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

export type HarnessCommand =
  | { type: "prompt"; id?: string; message: string }
  | { type: "steer"; id?: string; message: string }
  | { type: "abort"; id?: string }
  | { type: "get_session_stats"; id?: string }
  | { type: "get_state"; id?: string }
  | { type: "shutdown"; id?: string };

export interface HelloMessage {
  type: "hello";
  /** Replay every event with `hseq > after`, then stream live events. */
  after: number;
}

export interface HostResultMessage {
  type: "host_result";
  id: string;
  ok: boolean;
  data?: unknown;
  error?: string;
}

export type ClientMessage = HarnessCommand | HelloMessage | HostResultMessage;

export interface ResponseMessage {
  type: "response";
  id?: string;
  command: string;
  success: boolean;
  data?: unknown;
  error?: string;
  /** What went wrong, for failures the daemon acts on (the `error` text is for people). */
  code?: HarnessErrorCode;
}

/** Codes of harness failures the daemon decides on. */
export const HARNESS_ERROR_CODES = ["NO_TURN_RUNNING"] as const;
export type HarnessErrorCode = (typeof HARNESS_ERROR_CODES)[number];

/** A command failure with a code: `steer` with no running turn is `NO_TURN_RUNNING`. */
export class HarnessError extends Error {
  constructor(
    readonly code: HarnessErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "HarnessError";
  }
}

/**
 * Whether `err` is a `HarnessError`, by its name and code rather than `instanceof`: the agent
 * (agent.ts) is built into the harness's lazily loaded script with a copy of this module of its
 * own (harness-build.ts), so its errors are not instances of the socket server's class.
 */
export function isHarnessError(err: unknown): err is HarnessError {
  return (
    err instanceof Error &&
    err.name === "HarnessError" &&
    (HARNESS_ERROR_CODES as readonly unknown[]).includes((err as { code?: unknown }).code)
  );
}

/** Harness event names on the wire (see docs/design.md "Event names on the wire"). */
export type HarnessEventType =
  | "agent_start"
  | "agent_end"
  | "turn_start"
  | "turn_end"
  | "message_start"
  | "message_end"
  | "text"
  | "thinking"
  | "tool_start"
  | "tool_update"
  | "tool_end"
  | "compaction_start"
  | "compaction_end"
  | "auto_retry_start"
  | "auto_retry_end"
  | "extension_error"
  | "permission_request"
  | "permission_resolved"
  | "queue_update"
  /** A prompt was accepted (run now or queued); with `turn_settled`, tells how many turns are owed. */
  | "prompt_accepted"
  /** Emitted by swarmd's harness when the session is idle again: the turn is really over. */
  | "turn_settled";

/** One harness event as it travels and as it is logged. `hseq` is gap-free from 1. */
export interface HarnessEventMessage {
  type: "event";
  hseq: number;
  event: HarnessEventType;
  /** Epoch milliseconds when the harness emitted it. */
  at: number;
  data: Record<string, unknown>;
}

export interface HostCallMessage {
  type: "host_call";
  id: string;
  /** `permission`: a tool call the agent's `approve` policy holds; answered `{decision, message}` once decided. */
  method: "spawn_agent" | "await_result" | "permission";
  params: Record<string, unknown>;
}

/**
 * The tool a host call is for: its method, or for a `permission` the tool the approval is asked
 * for (when the harness named one that could be a tool's name).
 */
export function hostCallTool(call: HostCallMessage): string {
  if (call.method !== "permission") return call.method;
  const tool = call.params.tool;
  return typeof tool === "string" && tool.length > 0 && tool.length <= 64 ? tool : "permission";
}

export type HarnessMessage = ResponseMessage | HarnessEventMessage | HostCallMessage;

/** Data of the `turn_settled` event: how the turn ended and its final text. */
export interface TurnSettledData {
  outcome: "success" | "failed" | "aborted";
  /** Final assistant text of the turn; null when it produced none. */
  text: string | null;
  error?: string;
}

/** Events the ledger persists (spec section 6.2). Everything else is ephemeral. */
export const PERSISTED_HARNESS_EVENT_NAMES = [
  "agent_start",
  "agent_end",
  "turn_start",
  "turn_end",
  "tool_start",
  "tool_end",
  "compaction_start",
  "compaction_end",
  "permission_request",
  "permission_resolved",
  "auto_retry_start",
  "auto_retry_end",
  "extension_error",
] as const;
export type PersistedHarnessEventName = (typeof PERSISTED_HARNESS_EVENT_NAMES)[number];
/**
 * The persisted events a harness may report. `permission_request` and `permission_resolved` are
 * the daemon's own (it holds the approval inbox): the same names sent by a harness are dropped.
 */
export type HarnessRecordedEventName = Exclude<PersistedHarnessEventName, "permission_request" | "permission_resolved">;
export const HARNESS_RECORDED_EVENT_NAMES = PERSISTED_HARNESS_EVENT_NAMES.filter(
  (name): name is HarnessRecordedEventName => name !== "permission_request" && name !== "permission_resolved",
) as [HarnessRecordedEventName, ...HarnessRecordedEventName[]];
export const isHarnessRecordedEvent = (name: string): name is HarnessRecordedEventName =>
  (HARNESS_RECORDED_EVENT_NAMES as readonly string[]).includes(name);
export const PERSISTED_HARNESS_EVENTS: ReadonlySet<string> = new Set(PERSISTED_HARNESS_EVENT_NAMES);
export const isPersistedHarnessEvent = (name: string): name is PersistedHarnessEventName =>
  PERSISTED_HARNESS_EVENTS.has(name);
