import type {
  AgentDetail,
  CapChange,
  ControlResponse,
  Delivery,
  MachineView,
  ResultView,
  StopRequest,
} from "./api/agents.ts";
import type { Scope, SpendView } from "./api/fields.ts";
import type {
  AdoptRequest,
  AdoptResponse,
  ChangesView,
  ForkRequest,
  ForkResponse,
  WaitRequest,
  WaitResponse,
} from "./api/forks.ts";
import type { AGENT_STATES } from "./api/limits.ts";
import type { ModelView } from "./api/models.ts";
import type { NodeView } from "./api/nodes.ts";
import type { PermissionAnswer, PermissionState, PermissionView } from "./api/permissions.ts";
import type {
  CreateRunRequest,
  CreateRunResponse,
  RunSnapshot,
  RunSummary,
  SpawnRequest,
  SpawnResponse,
} from "./api/runs.ts";

/**
 * What the HTTP routes, the tool bridge and agents' host calls ask of swarmd. Routes are thin:
 * they validate, call this, and shape the answer. Every method throws `SwarmError`s
 * (`RUN_NOT_FOUND`, `AGENT_NOT_FOUND`, `AGENT_NOT_LIVE`, `AGENT_NOT_PAUSED`, `INVALID_BODY`,
 * `HARNESS_REJECTED`, `SANDBOX_FREEZE_FAILED`, `SANDBOX_THAW_FAILED`, ...).
 *
 * The request and answer types are those of the routes' zod schemas (`src/api/`, one file per
 * resource), re-exported here under the names the service, views, CLI and console import. This
 * module holds no zod at run time: the console bundles it.
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
  /**
   * Children of an agent between turns, each starting from its conversation at its last settled
   * turn and its /work now, then its own prompt (`AGENT_BUSY` while it is in a turn).
   */
  fork(agentId: string, request: ForkRequest): Promise<ForkResponse>;
  /** What a fork child changed in /work since its fork point, with diffs (`NOT_A_FORK` for another agent). */
  changes(agentId: string): Promise<ChangesView>;
  /** Apply a direct fork child's changes onto the agent's /work, between turns (`ADOPT_CONFLICT`, `DISK_LIMIT`). */
  adopt(agentId: string, request: AdoptRequest): Promise<AdoptResponse>;
  /** Wait for several agents of a run: all settled, or the first success; `signal` ends the wait early. */
  waitFor(runId: string, request: WaitRequest, signal?: AbortSignal): Promise<WaitResponse>;
  /** Whether a run exists (for the event stream's 404). */
  hasRun(runId: string): boolean;
  /** The models a spec may name, by provider then id: only `provider`'s, only those with a key when `available`. Never a key. */
  listModels(filter?: { provider?: string; available?: boolean }): { models: ModelView[] };
  /** The runtime's nodes with this data folder's live sandboxes on each (`RUNTIME_UNAVAILABLE` when the runtime does not answer in time). */
  listNodes(): Promise<{ nodes: NodeView[] }>;
}

export type {
  AgentDetail,
  AgentView,
  CapChange,
  ControlResponse,
  Delivery,
  MachineTransition,
  MachineView,
  MemberResult,
  PausedBy,
  ResultView,
  StopMode,
  StopRequest,
} from "./api/agents.ts";
export type { ForkedFrom, ForkPoint, Outcome, Scope, SpendView, Usage } from "./api/fields.ts";
export type {
  AdoptRequest,
  AdoptResponse,
  ChangesView,
  FileChange,
  ForkRequest,
  ForkResponse,
  ForkSpec,
  WaitRequest,
  WaitResponse,
  WaitResult,
} from "./api/forks.ts";
export {
  ACTIVITIES,
  AGENT_STATES,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_RUN_LIST_LIMIT,
  MACHINE_TRANSITIONS_KEPT,
  MAX_DRAIN_TIMEOUT_MS,
  MAX_FORK_COPIES,
  MAX_PERMISSION_MESSAGE_CHARS,
  MAX_RUN_LIST_LIMIT,
  MAX_WAIT_SECONDS,
  OUTCOMES,
} from "./api/limits.ts";
export type { KeySource, ModelView } from "./api/models.ts";
export type { NodeView } from "./api/nodes.ts";
export type {
  PermissionAnswer,
  PermissionBy,
  PermissionDecision,
  PermissionState,
  PermissionView,
} from "./api/permissions.ts";
export type {
  BudgetOverride,
  CreateRunRequest,
  CreateRunResponse,
  RunSnapshot,
  RunSummary,
  SpawnRequest,
  SpawnResponse,
  SpendCaps,
} from "./api/runs.ts";

export type { Activity, AgentTimeline, RunTimeline, TimelineSpan, TimelineStatus } from "./api/timeline.ts";

export type AgentState = (typeof AGENT_STATES)[number];
export type LiveState = Exclude<AgentState, "done" | "aborted">;
/** An agent's state as the service decides on it: the API's states, and `ending` while its sandbox closes. */
export type AgentStatus = AgentState | "ending";

/** Live: neither ended nor on its way out. The one definition, for the service, the CLI and the bridge. */
export const isLive = (status: AgentStatus): boolean =>
  status !== "done" && status !== "aborted" && status !== "ending";

/** Why an agent ended as it did, when it was not just its own work that ended it. */
export type EndReason = "drained" | "drain-timeout";
