/**
 * The API's runtime constants, in a module without zod: the web console bundles them (through
 * `src/swarm-api.ts` and the run view) and must not bundle the route schemas that use them.
 */

/** Every state of the API, in lifecycle order: the one list the counts, tables and schemas use. */
export const AGENT_STATES = ["spawning", "provisioning", "running", "paused", "done", "aborted"] as const;

/** How an agent ended (spec section 2.3). */
export const OUTCOMES = ["success", "failed", "aborted", "budget-exceeded", "lost"] as const;

/** How long a drain may take before its members still live are aborted, unless the request says. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10 * 60_000;
export const MAX_DRAIN_TIMEOUT_MS = 24 * 3_600_000;

/** The longest `message` of a decision, in characters. */
export const MAX_PERMISSION_MESSAGE_CHARS = 10_000;

export const DEFAULT_RUN_LIST_LIMIT = 100;
export const MAX_RUN_LIST_LIMIT = 1_000;

/** Transitions of an agent's machine kept for `GET /agents/:agentId/machine`. */
export const MACHINE_TRANSITIONS_KEPT = 50;

/** Spec section 4.12: the longest `wait` a result request may hold, in seconds. */
export const MAX_WAIT_SECONDS = 240;

/** What an agent can be doing on a run's timeline (`GET /runs/:runId/timeline`), in lifecycle order. */
export const ACTIVITIES = [
  "waiting",
  "provisioning",
  "turn",
  "idle",
  "paused",
  "hibernated",
  "approval",
  "draining",
] as const;

/** Children one fork makes: `prompts` (or `count`) holds 1..MAX_FORK_COPIES. */
export const MAX_FORK_COPIES = 32;

/** `POST /runs/:runId/wait`: how long it may hold, in ms, and how long it holds unless told. */
export const MAX_WAIT_MANY_MS = 600_000;
export const DEFAULT_WAIT_MANY_MS = 240_000;
/** Agents one wait may name. */
export const MAX_WAIT_AGENTS = 256;

/** `GET /agents/:agentId/changes`: the most diff text of one file, and of one answer, in bytes. */
export const MAX_DIFF_BYTES_PER_FILE = 256 * 1024;
export const MAX_DIFF_BYTES = 4 * 1024 * 1024;
