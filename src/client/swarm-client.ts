import {
  getAgent,
  getAgentMachine,
  getResult,
  pauseAgent,
  promptAgent,
  resumeAgent,
  setBudget,
  steerAgent,
  stopAgent,
} from "../api/agents.ts";
import { adoptChanges, forkAgent, getChanges, waitForAgents } from "../api/forks.ts";
import { DEFAULT_WAIT_MANY_MS } from "../api/limits.ts";
import { listModels } from "../api/models.ts";
import { listNodes } from "../api/nodes.ts";
import type { AnswerOf, Operation, RouteRequest } from "../api/operation.ts";
import { listPermissions, resolvePermission } from "../api/permissions.ts";
import { createRun, deleteRun, getRun, listRuns, spawnAgent } from "../api/runs.ts";
import {
  type AdoptResponse,
  type AgentDetail,
  type ChangesView,
  type ControlResponse,
  type CreateRunRequest,
  type CreateRunResponse,
  type Delivery,
  type ForkResponse,
  MAX_WAIT_SECONDS,
  type MachineView,
  type ModelView,
  type NodeView,
  type PermissionAnswer,
  type PermissionState,
  type PermissionView,
  type ResultView,
  type RunSnapshot,
  type RunSummary,
  type Scope,
  type SpawnRequest,
  type SpawnResponse,
  type SpendCaps,
  type SpendView,
  type StopMode,
  type WaitResponse,
} from "../swarm-api.ts";
import { ServiceError } from "./client-errors.ts";
import type { Endpoint } from "./endpoint.ts";
import { type StreamOptions, type SwarmEvent, streamEvents } from "./event-stream.ts";
import { httpCall } from "./http-call.ts";

/** Ordinary calls: the service answers these at once (a 2 s session-stats wait at most). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Cascades (delete, subtree stop/pause) wait for every member's sandbox; give them room. */
export const CASCADE_TIMEOUT_MS = 120_000;
/** Headroom added on top of any hold the client itself asks for, so the client never gives up first. */
export const WAIT_MARGIN_MS = 30_000;
/**
 * Forks, changes and adopts copy or compare a sandbox's files: the service gives a fork point or an
 * adopt up to 300 s, a comparison 60 s to open the trees and 120 s to read them.
 */
export const COPY_TIMEOUT_MS = 300_000 + WAIT_MARGIN_MS;
export { MAX_PERMISSION_MESSAGE_CHARS } from "../swarm-api.ts";

export interface CallOptions {
  signal?: AbortSignal;
}

/** A route's body as a caller writes it: the fields the service defaults may be left out. */
type BodyOf<O extends Operation> = NonNullable<RouteRequest<O>["body"]>;

/**
 * A typed client of swarmd's HTTP routes (spec section 4), shared by the tool bridge and the CLI.
 * Stateless: every method is one request. Methods reject with `ServiceError` (the service's
 * status and message) or `ServiceUnreachableError` (nothing answered at `endpoint.url`).
 */
export interface SwarmClient {
  readonly endpoint: Endpoint;
  /**
   * Whether the daemon answers `GET /health` within `timeoutMs`: 200, or 503 while its disk is full
   * (it runs, and still answers reads and controls); never throws.
   */
  health(timeoutMs?: number): Promise<boolean>;
  /**
   * Any route of src/api/ with its path parameters, query values and body, answered with what the
   * route's answer schema says (the bridge's route tools call this; the methods below do too).
   */
  call<O extends Operation>(route: O, request: RouteRequest<O>, options?: CallOptions): Promise<AnswerOf<O>>;
  createRun(request: CreateRunRequest, options?: CallOptions): Promise<CreateRunResponse>;
  /** Every run the service knows, newest first: at most `limit` (1..1000; the service's default is 100). */
  listRuns(limit?: number, options?: CallOptions): Promise<{ runs: RunSummary[] }>;
  getRun(runId: string, options?: CallOptions): Promise<RunSnapshot>;
  /** Stops every live agent of the run; with `purge` the run is then removed for good (a later call naming it is a 404). */
  deleteRun(runId: string, options?: CallOptions & { purge?: boolean }): Promise<void>;
  spawn(runId: string, request: SpawnRequest, options?: CallOptions): Promise<SpawnResponse>;
  /** The agent view with its usage, its subtree's usage, its spend budget and (when it answers) `sessionStats`. */
  getAgent(agentId: string, options?: CallOptions): Promise<AgentDetail>;
  /** The agent's state machine as the service runs it: state value, tags and its latest transitions (a 404 `ServiceError` for an unknown agent). */
  getMachine(agentId: string, options?: CallOptions): Promise<MachineView>;
  /**
   * New absolute spend caps for the agent's subtree (give at least one). Rejects with a 409
   * `ServiceError` when a cap would leave the agent more than its parent has left. Never resumes
   * an agent paused by its budget: resume it after raising.
   */
  setBudget(agentId: string, caps: SpendCaps, options?: CallOptions): Promise<{ agentId: string; budget: SpendView }>;
  prompt(agentId: string, text: string, options?: CallOptions): Promise<void>;
  steer(
    agentId: string,
    request: { message: string; scope?: Scope },
    options?: CallOptions,
  ): Promise<ControlResponse & { delivery: Delivery }>;
  pause(agentId: string, scope?: Scope, options?: CallOptions): Promise<ControlResponse>;
  resume(agentId: string, scope?: Scope, options?: CallOptions): Promise<ControlResponse>;
  /**
   * `abort` (default) ends the members now. `drain` answers at once: each member then ends once its
   * running turn settles, or is aborted after `drainTimeoutMs` (drain only; the service's default
   * is 10 minutes). A draining agent refuses prompts, steers and spawns with a 409.
   */
  stop(
    agentId: string,
    request?: { mode?: StopMode; scope?: Scope; drainTimeoutMs?: number },
    options?: CallOptions,
  ): Promise<ControlResponse>;
  /** The run's approval requests, oldest first: `pending` (the service's default), `resolved` or `all`. */
  listPermissions(
    runId: string,
    state?: PermissionState | "all",
    options?: CallOptions,
  ): Promise<{ permissions: PermissionView[] }>;
  /**
   * Allow or deny a pending approval request of the agent; resolves with the request as resolved.
   * Rejects with a 404 `ServiceError` for an unknown request (or one of another agent) and a 409
   * when it was already resolved (by the operator, a stop, a deleted run or its timeout).
   */
  resolvePermission(
    agentId: string,
    requestId: string,
    answer: PermissionAnswer,
    options?: CallOptions,
  ): Promise<PermissionView>;
  /** Settled (200) or still pending after `waitSeconds` (202); both resolve. */
  result(agentId: string, waitSeconds?: number, options?: CallOptions): Promise<ResultView>;
  /**
   * Children of an agent between turns, each from its conversation and /work now, one per prompt
   * (`prompts`, or `count` copies of `prompt`); kept live after their turn unless `keepAlive` is
   * false. A 409 `ServiceError` while the agent is in a turn (`AGENT_BUSY`), draining or ended.
   */
  fork(agentId: string, request: BodyOf<typeof forkAgent>, options?: CallOptions): Promise<ForkResponse>;
  /** What a fork child changed in /work since its fork point, with diffs; a 409 for an agent not made by a fork. */
  changes(agentId: string, options?: CallOptions): Promise<ChangesView>;
  /**
   * Applies a direct fork child's changes (`from`) onto the agent's /work, between turns. With
   * `onConflict` "fail" (the service's default) a path both changed since the fork is a 409 and
   * nothing is applied; "theirs" takes the child's version. `from` not a fork child of it is a 400.
   */
  adopt(agentId: string, request: BodyOf<typeof adoptChanges>, options?: CallOptions): Promise<AdoptResponse>;
  /**
   * Waits for several agents of the run: every one settled (`all`, the default) or the first success
   * (`first`), for at most `timeoutMs` (the service's default 240 s); unfinished ones come back
   * `pending`. The call's own timeout exceeds the wait (and the stops of `stopOthers`).
   */
  waitFor(runId: string, request: BodyOf<typeof waitForAgents>, options?: CallOptions): Promise<WaitResponse>;
  /** The run's event stream; see `streamEvents`. */
  events(runId: string, options?: StreamOptions): AsyncGenerator<SwarmEvent>;
  /** The models a spec may name (only `provider`'s; only those whose key the service finds when `available`), never a key. */
  listModels(
    filter?: { provider?: string; available?: boolean },
    options?: CallOptions,
  ): Promise<{ models: ModelView[] }>;
  /** The machines sandboxes run on, with the service's live sandboxes on each (one, `local`, on single-host runtimes). */
  listNodes(options?: CallOptions): Promise<{ nodes: NodeView[] }>;
}

export function createSwarmClient(endpoint: Endpoint): SwarmClient {
  const call = async <O extends Operation>(
    route: O,
    request: RouteRequest<O>,
    options?: CallOptions,
  ): Promise<AnswerOf<O>> => {
    const wide = request as RouteRequest<Operation>;
    const reply = await httpCall(endpoint, {
      method: route.method.toUpperCase() as "GET" | "POST" | "DELETE",
      path: pathOf(route, wide),
      body: wide.body,
      signal: options?.signal,
      timeoutMs: callTimeoutMs(route, wide),
    });
    return reply.body as AnswerOf<O>;
  };

  return {
    endpoint,
    async health(timeoutMs = 3_000) {
      try {
        await httpCall(endpoint, { method: "GET", path: "/health", timeoutMs });
        return true;
      } catch (err) {
        return err instanceof ServiceError && err.status === 503;
      }
    },
    call,
    createRun: (request, options) => call(createRun, { body: request }, options),
    listRuns: (limit, options) => call(listRuns, { query: { limit } }, options),
    getRun: (runId, options) => call(getRun, { params: { runId } }, options),
    async deleteRun(runId, options) {
      await call(deleteRun, { params: { runId }, query: { purge: options?.purge || undefined } }, options);
    },
    spawn: (runId, request, options) => call(spawnAgent, { params: { runId }, body: request }, options),
    getAgent: (agentId, options) => call(getAgent, { params: { agentId } }, options),
    getMachine: (agentId, options) => call(getAgentMachine, { params: { agentId } }, options),
    setBudget: (agentId, caps, options) => call(setBudget, { params: { agentId }, body: caps }, options),
    async prompt(agentId, text, options) {
      await call(promptAgent, { params: { agentId }, body: { text } }, options);
    },
    steer: (agentId, request, options) => call(steerAgent, { params: { agentId }, body: request }, options),
    pause: (agentId, scope = "agent", options) => call(pauseAgent, { params: { agentId }, body: { scope } }, options),
    resume: (agentId, scope = "agent", options) => call(resumeAgent, { params: { agentId }, body: { scope } }, options),
    stop: (agentId, request = {}, options) => call(stopAgent, { params: { agentId }, body: request }, options),
    listPermissions: (runId, state, options) => call(listPermissions, { params: { runId }, query: { state } }, options),
    resolvePermission: (agentId, requestId, answer, options) =>
      call(resolvePermission, { params: { agentId, requestId }, body: answer }, options),
    result: (agentId, waitSeconds = 0, options) =>
      call(getResult, { params: { agentId }, query: { wait: waitSeconds } }, options),
    fork: (agentId, request, options) => call(forkAgent, { params: { agentId }, body: request }, options),
    changes: (agentId, options) => call(getChanges, { params: { agentId } }, options),
    adopt: (agentId, request, options) => call(adoptChanges, { params: { agentId }, body: request }, options),
    waitFor: (runId, request, options) => call(waitForAgents, { params: { runId }, body: request }, options),
    events: (runId, options) => streamEvents(endpoint, runId, options),
    listModels: (filter = {}, options) =>
      call(listModels, { query: { provider: filter.provider, available: filter.available || undefined } }, options),
    listNodes: (options) => call(listNodes, {}, options),
  };
}

/** The route's path with its parameters filled in, and its query values after `?`. */
function pathOf(route: Operation, request: RouteRequest<Operation>): string {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = request.params?.[name];
    if (value === undefined) throw new Error(`${route.operationId}: no value for path parameter ${name}`);
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query ?? {}))
    if (value !== undefined) query.set(name, String(value));
  const search = query.toString();
  return search === "" ? path : `${path}?${search}`;
}

/**
 * How long the client waits for an answer: longer than any hold the request asks of the service.
 * Spec 4.13: a caller's timeout must exceed the hold of a spawn with `waitFor`. This service answers
 * such spawns at once, but one that holds them is given the longest hold the spec knows. A wait for
 * several agents holds `timeoutMs`, then stops the others with `stopOthers`: a cascade's time more.
 */
export function callTimeoutMs(route: Operation, request: RouteRequest<Operation>): number {
  switch (route.operationId) {
    case deleteRun.operationId:
    case steerAgent.operationId:
    case pauseAgent.operationId:
    case resumeAgent.operationId:
    case stopAgent.operationId:
      return CASCADE_TIMEOUT_MS;
    case spawnAgent.operationId: {
      const waitFor = (request.body as { waitFor?: unknown[] } | undefined)?.waitFor;
      return waitFor?.length ? MAX_WAIT_SECONDS * 1000 + WAIT_MARGIN_MS : DEFAULT_TIMEOUT_MS;
    }
    case getResult.operationId:
      return Number(request.query?.wait ?? 0) * 1000 + WAIT_MARGIN_MS;
    case forkAgent.operationId:
    case getChanges.operationId:
    case adoptChanges.operationId:
      return COPY_TIMEOUT_MS;
    case waitForAgents.operationId: {
      const body = request.body as { timeoutMs?: number; stopOthers?: boolean } | undefined;
      const hold = body?.timeoutMs ?? DEFAULT_WAIT_MANY_MS;
      return hold + (body?.stopOthers ? CASCADE_TIMEOUT_MS : WAIT_MARGIN_MS);
    }
    default:
      return DEFAULT_TIMEOUT_MS;
  }
}
