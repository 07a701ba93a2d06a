import type { AgentSpec } from "./spec/agent-spec.ts";

/**
 * What the HTTP routes, the tool bridge and agents' host calls ask of swarmd. Routes are thin:
 * they validate, call this, and shape the answer. Every method throws `SwarmError`s
 * (`RUN_NOT_FOUND`, `AGENT_NOT_FOUND`, `AGENT_NOT_LIVE`, `AGENT_NOT_PAUSED`, `INVALID_BODY`,
 * `HARNESS_REJECTED`, `SANDBOX_FREEZE_FAILED`, `SANDBOX_THAW_FAILED`, ...).
 */
export interface SwarmApi {
  createRun(request: CreateRunRequest): Promise<CreateRunResponse>;
  /** Every run the daemon knows, newest first, at most `limit` (default 100). */
  listRuns(limit?: number): { runs: RunSummary[] };
  /** The agent's state machine as the daemon runs it: state value, tags and its latest transitions. */
  getMachine(agentId: string): MachineView;
  /** Snapshot of a run: a fold of its ledger up to `asOf`. */
  getRun(runId: string): RunSnapshot;
  /**
   * Abort and close every live agent of the run (leaves first); the ledger is kept. With `purge`
   * the run is then removed for good (its ledger, results and sandbox folders): every call naming
   * it or its agents answers `RUN_NOT_FOUND` / `AGENT_NOT_FOUND` from then on, after a restart too.
   */
  deleteRun(runId: string, options?: { purge?: boolean }): Promise<void>;
  spawn(runId: string, request: SpawnRequest): Promise<SpawnResponse>;
  /** The agent view plus `sessionStats` when the harness answers within 2 s and the agent is not paused. */
  getAgent(agentId: string): Promise<AgentDetail>;
  /** New absolute spend caps for the agent's subtree (409 when one exceeds what its parent has left); never resumes by itself. */
  setBudget(agentId: string, caps: CapChange): Promise<{ agentId: string; budget: SpendView }>;
  prompt(agentId: string, text: string): Promise<void>;
  steer(agentId: string, request: { message: string; scope: Scope }): Promise<ControlResponse & { delivery: Delivery }>;
  pause(agentId: string, scope: Scope): Promise<ControlResponse>;
  resume(agentId: string, scope: Scope): Promise<ControlResponse>;
  /**
   * `abort` ends the members now, leaves first. `drain` marks them draining, parents first, and
   * answers; each then ends once its running turn settled (and, in a subtree drain, its children
   * ended), or is aborted at the deadline (`drainTimeoutMs`, default 10 minutes).
   */
  stop(agentId: string, request: StopRequest): Promise<ControlResponse>;
  /** The run's approval requests: `pending` (default), `resolved` or `all`, oldest first. */
  listPermissions(runId: string, state?: PermissionState | "all"): { permissions: PermissionView[] };
  /** Answer an agent's pending approval request (404 unknown, 409 already resolved). */
  resolvePermission(agentId: string, requestId: string, answer: PermissionAnswer): Promise<PermissionView>;
  /** The agent's result, waiting up to `waitSeconds` while it is pending (resolves early when `signal` aborts). */
  result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView>;
  /** Whether a run exists (for the event stream's 404). */
  hasRun(runId: string): boolean;
}

export type Scope = "agent" | "subtree";

export type StopMode = "abort" | "drain";
/** How long a drain may take before its members still live are aborted, unless the request says. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10 * 60_000;
export const MAX_DRAIN_TIMEOUT_MS = 24 * 3_600_000;

export interface StopRequest {
  mode: StopMode;
  scope: Scope;
  /** `drain` only: how long the members may take to finish before they are aborted. */
  drainTimeoutMs?: number;
}

/** Why an agent ended as it did, when it was not just its own work that ended it. */
export type EndReason = "drained" | "drain-timeout";

export type PermissionDecision = "allow" | "deny";
export type PermissionState = "pending" | "resolved";
/** Who decided: the operator, a stop of the agent (any end), a deleted run, or `approveTimeoutMs`. */
export type PermissionBy = "operator" | "stop" | "run-deleted" | "timeout";

/** The longest `message` of a decision, in characters. */
export const MAX_PERMISSION_MESSAGE_CHARS = 10_000;

export interface PermissionAnswer {
  decision: PermissionDecision;
  /** For a deny: what the model is told (the tool call's error). */
  message?: string;
}

/** One approval request: a tool call an agent's `approve` policy holds for the operator. */
export interface PermissionView {
  requestId: string;
  runId: string;
  agentId: string;
  tool: string;
  /** The call's arguments (dropped, with a note, when they exceed the event size limit). */
  args: Record<string, unknown>;
  at: number;
  /** When `approveTimeoutMs` denies it; null: no timeout. */
  expiresAt: number | null;
  state: PermissionState;
  decision: PermissionDecision | null;
  message: string | null;
  by: PermissionBy | null;
  resolvedAt: number | null;
}
export type Delivery = "steer" | "turn" | "queued";
/** Who paused an agent: the operator, a pause of a subtree above it, or a spend budget it or an ancestor ran out of. */
export type PausedBy = "operator" | "cascade" | "budget";

export interface SpendCaps {
  maxTokens?: number;
  maxCostUsd?: number;
}

/** New caps for `POST /agents/:agentId/budget`: a number sets one, `null` lifts the agent's own (its ancestors' still bound it). */
export interface CapChange {
  maxTokens?: number | null;
  maxCostUsd?: number | null;
}

export interface BudgetOverride extends SpendCaps {
  spawnDepth?: number;
  maxAgents?: number;
}

/** Model usage summed over calls (an agent's own, its subtree's, or a run's). Tokens of every kind count toward `maxTokens`. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  calls: number;
}

/** An agent's spend caps and what is left of them (null: no cap on that dimension, here or above). */
export interface SpendView {
  maxTokens: number | null;
  maxCostUsd: number | null;
  remainingTokens: number | null;
  remainingCostUsd: number | null;
}

/** `GET /agents/:agentId`: the view, its usage, and `sessionStats` when the harness answers in time. */
export type AgentDetail = AgentView & { budget: SpendView; sessionStats?: Record<string, unknown> };

export interface CreateRunRequest {
  spec: AgentSpec;
  prompt?: string;
  budget?: BudgetOverride;
  /** Keep the root live and idle after its turns until stopped (docs/design.md). */
  keepAlive?: boolean;
}

export interface CreateRunResponse {
  runId: string;
  rootAgentId: string;
  state: "provisioning";
}

export interface SpawnRequest {
  parentAgentId: string;
  spec: AgentSpec;
  prompt?: string;
  waitFor?: string[];
  budget?: BudgetOverride;
  idempotencyKey?: string;
  keepAlive?: boolean;
}

export interface SpawnResponse {
  agentId: string;
  state: "provisioning" | "spawning";
}

/** Every state of the API, in lifecycle order: the one list the counts, tables and schemas use. */
export const AGENT_STATES = ["spawning", "provisioning", "running", "paused", "done", "aborted"] as const;
export type AgentState = (typeof AGENT_STATES)[number];
export type LiveState = Exclude<AgentState, "done" | "aborted">;
/** An agent's state as the service decides on it: the API's states, and `ending` while its sandbox closes. */
export type AgentStatus = AgentState | "ending";

/** Live: neither ended nor on its way out. The one definition, for the service, the CLI and the bridge. */
export const isLive = (status: AgentStatus): boolean =>
  status !== "done" && status !== "aborted" && status !== "ending";

export type Outcome = "success" | "failed" | "aborted" | "budget-exceeded" | "lost";

/** Spec section 2.2. */
export interface AgentView {
  agentId: string;
  runId: string;
  parentAgentId: string | null;
  depth: number;
  spawnIndex: number;
  state: AgentState;
  specName: string;
  sandboxId: string | null;
  createdAt: number;
  endedAt: number | null;
  outcome: Outcome | null;
  pausedBy?: PausedBy;
  /**
   * Present (true) while the agent hibernates: still `running`, idle between turns, its harness
   * ended to free memory; the next prompt or steer starts it again with its session and files.
   */
  hibernated?: true;
  /** Present (true) once a drain reached the agent: it takes no new prompt, steer or spawn and ends when its turn settles. */
  draining?: true;
  /** Ids of its approval requests that wait for a decision (`GET /runs/:runId/permissions`). */
  pendingPermissions: string[];
  /** Present while the agent's sandbox waits for a start slot (the daemon starts a few at a time): 1 is next. */
  queuePosition?: number;
  /** Its own model calls, and those of its whole subtree (it and every descendant). */
  usage: Usage;
  subtreeUsage: Usage;
}

/** `GET /runs`: one run at a glance. */
export interface RunSummary {
  runId: string;
  rootAgentId: string;
  /** The root's spec name. */
  specName: string;
  /** When the run was created (its root's `agent_spawned`). */
  createdAt: number;
  /** How many of its agents are in each state (every state named, 0 included). */
  states: Record<AgentState, number>;
  /** Agents in all, and those live now. */
  agents: number;
  live: number;
  usage: Usage;
}

export const DEFAULT_RUN_LIST_LIMIT = 100;
export const MAX_RUN_LIST_LIMIT = 1_000;

/** One transition of an agent's machine: the event it took and the state it went to. */
export interface MachineTransition {
  at: number;
  event: string;
  value: unknown;
}

/** `GET /agents/:agentId/machine`: an offline stand-in for the Stately inspector. */
export interface MachineView {
  agentId: string;
  /** Whether the daemon runs a machine for it now (an agent that had ended before a restart has none). */
  running: boolean;
  /** The machine's state value (XState's `snapshot.value`); null without a machine. */
  value: unknown;
  /** Tags of the current state (`live`, `running`, `paused`, ...). */
  tags: string[];
  /** Its latest transitions, oldest first (at most `MACHINE_TRANSITIONS_KEPT`, since the daemon started). */
  transitions: MachineTransition[];
}

export const MACHINE_TRANSITIONS_KEPT = 50;

/** Spec section 2.1 (snapshot form). */
export interface RunSnapshot {
  runId: string;
  rootAgentId: string;
  asOf: number;
  agents: AgentView[];
  /** Every model call of the run, summed. */
  usage: Usage;
}

export interface MemberResult {
  agentId: string;
  outcome: "applied" | "noop" | "failed";
  error?: string;
}

export interface ControlResponse {
  results: MemberResult[];
}

/** Spec section 4.12: the longest `wait` a result request may hold, in seconds. */
export const MAX_WAIT_SECONDS = 240;

/** Spec section 2.4. */
export interface ResultView {
  agentId: string;
  state: "settled" | "pending";
  outcome: Outcome | null;
  resultRef: string | null;
  result: string | null;
}
