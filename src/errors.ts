/**
 * The one error registry. Every error swarmd raises on purpose is a `SwarmError` with a stable
 * uppercase `code`; `src/http/` maps codes to HTTP statuses in one place. Handlers never build
 * error JSON themselves.
 */
export const ERROR_CODES = {
  // Requests
  INVALID_BODY: "The request body is not valid.",
  INVALID_QUERY: "A query parameter is not valid.",
  UNAUTHORIZED: "Missing or wrong bearer token.",
  HOST_NOT_ALLOWED: "The Host header names no host this daemon serves.",
  ORIGIN_NOT_ALLOWED: "The Origin header names another origin than the daemon's own.",
  METHOD_NOT_ALLOWED: "The route does not take this method.",
  NOT_ACCEPTABLE: "The Accept header refuses what the route answers.",
  BODY_TOO_LARGE: "The request body is too large.",
  NOT_FOUND: "No such route.",
  RUN_NOT_FOUND: "Run does not exist.",
  AGENT_NOT_FOUND: "Agent does not exist.",
  AGENT_NOT_LIVE: "Agent is not live.",
  AGENT_NOT_PAUSED: "Agent is not paused.",
  AGENT_DRAINING: "Agent is draining: it takes no new prompt, steer or spawn.",
  PERMISSION_NOT_FOUND: "No such approval request for this agent.",
  PERMISSION_RESOLVED: "The approval request was already resolved.",
  BUDGET_EXCEEDS_PARENT: "A spend cap would exceed what the agent's parent has left.",
  AGENT_BUSY: "Agent is in a turn: it can be forked or adopt changes only between turns.",
  NOT_A_FORK: "Agent was not made by a fork: it has no fork point.",
  ADOPT_CONFLICT: "Files the child changed were also changed by the agent since the fork.",
  DISK_LIMIT: "The changes would take the sandbox's /work over its disk limit.",
  TREE_TOO_LARGE: "The /work to compare holds too many entries.",
  // The tool bridge over HTTP (/mcp)
  MCP_SESSION_NOT_FOUND: "No open MCP session has this id: initialize a new one.",
  MCP_SESSION_BUSY: "The MCP session has too many requests in flight.",
  MCP_SESSIONS_FULL: "Every MCP session the daemon keeps has a request in flight.",
  // Sandboxes
  SANDBOX_EXISTS: "A sandbox with this id already exists.",
  SANDBOX_NOT_FOUND: "No such sandbox.",
  SANDBOX_GONE: "The sandbox's processes or container vanished.",
  SANDBOX_PROVISION_FAILED: "The sandbox could not be provisioned.",
  SANDBOX_FREEZE_FAILED: "The sandbox could not be paused.",
  SANDBOX_THAW_FAILED: "The sandbox could not be resumed.",
  SANDBOX_FROZEN: "The sandbox is frozen: thaw it first.",
  SNAPSHOT_FAILED: "The fork point (the sandbox's files and conversation) could not be taken.",
  INVALID_INPUT_NAME: "An input file name is not a plain file name.",
  RUNTIME_UNAVAILABLE: "The sandbox runtime cannot be reached.",
  // Harness
  HARNESS_START_FAILED: "The harness did not start.",
  HARNESS_UNREACHABLE: "The harness socket does not answer.",
  HARNESS_REJECTED: "The harness did not accept the command.",
  HARNESS_TIMEOUT: "The harness did not answer in time.",
  // An agent's tool calls that swarmd refuses (recorded as `tool_refused`, never an HTTP answer)
  HOST_CALLS_FULL: "Too many host calls of one agent wait already.",
  PERMISSION_DENIED: "The tool call was denied by an approval decision.",
  SPAWN_BUDGET_EXCEEDED: "The spawn was refused by a spawn budget.",
  MODEL_CALL_REFUSED: "The model gateway refused or could not carry out the model call.",
  // Misc
  CONFIG_INVALID: "The configuration is not valid.",
  INTERNAL: "Internal error.",
  CONSOLE_NOT_BUILT: "The web console is not built.",
  LEDGER_CLOSED: "The ledger is closed.",
  STORAGE_FULL: "The data folder is full: nothing was written.",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class SwarmError extends Error {
  readonly code: ErrorCode;
  /** Extra machine-readable details (for example the failing fields of a body). */
  readonly details?: unknown;

  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }) {
    super(message ?? ERROR_CODES[code], options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SwarmError";
    this.code = code;
    this.details = options?.details;
  }
}

export function isSwarmError(err: unknown, code?: ErrorCode): err is SwarmError {
  return err instanceof SwarmError && (code === undefined || err.code === code);
}

/** The message of anything thrown, for logs and `error` fields (stated once, in the pure layer the machines use). */
export { errorMessage } from "../machines/error-message.ts";
