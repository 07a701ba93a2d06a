import {
  type AgentDetail,
  type ControlResponse,
  type CreateRunRequest,
  type CreateRunResponse,
  type Delivery,
  MAX_WAIT_SECONDS,
  type MachineView,
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
} from "../swarm-api.ts";
import type { Endpoint } from "./endpoint.ts";
import { type StreamOptions, type SwarmEvent, streamEvents } from "./event-stream.ts";
import { type HttpCall, httpCall } from "./http-call.ts";

/** Ordinary calls: the service answers these at once (a 2 s session-stats wait at most). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Cascades (delete, subtree stop/pause) wait for every member's sandbox; give them room. */
export const CASCADE_TIMEOUT_MS = 120_000;
/** Headroom added on top of any hold the client itself asks for, so the client never gives up first. */
export const WAIT_MARGIN_MS = 30_000;
export { MAX_PERMISSION_MESSAGE_CHARS } from "../swarm-api.ts";

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * A typed client of swarmd's HTTP routes (spec section 4), shared by the tool bridge and the CLI.
 * Stateless: every method is one request. Methods reject with `ServiceError` (the service's
 * status and message) or `ServiceUnreachableError` (nothing answered at `endpoint.url`).
 */
export interface SwarmClient {
  readonly endpoint: Endpoint;
  /** Whether `GET /health` answers 2xx within `timeoutMs`; never throws. */
  health(timeoutMs?: number): Promise<boolean>;
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
  /** The run's event stream; see `streamEvents`. */
  events(runId: string, options?: StreamOptions): AsyncGenerator<SwarmEvent>;
}

export function createSwarmClient(endpoint: Endpoint): SwarmClient {
  const call = async <T>(request: Omit<HttpCall, "timeoutMs"> & { timeoutMs?: number }): Promise<T> => {
    const reply = await httpCall(endpoint, { timeoutMs: DEFAULT_TIMEOUT_MS, ...request });
    return reply.body as T;
  };
  const run = (runId: string) => `/runs/${encodeURIComponent(runId)}`;
  const agent = (agentId: string) => `/agents/${encodeURIComponent(agentId)}`;
  const control = (agentId: string, action: string, body: object, signal?: AbortSignal) =>
    call<ControlResponse>({
      method: "POST",
      path: `${agent(agentId)}/${action}`,
      body,
      signal,
      timeoutMs: CASCADE_TIMEOUT_MS,
    });

  return {
    endpoint,
    async health(timeoutMs = 3_000) {
      try {
        await httpCall(endpoint, { method: "GET", path: "/health", timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
    createRun: (request, options) => call({ method: "POST", path: "/runs", body: request, signal: options?.signal }),
    listRuns: (limit, options) =>
      call({ method: "GET", path: `/runs${limit === undefined ? "" : `?limit=${limit}`}`, signal: options?.signal }),
    getRun: (runId, options) => call({ method: "GET", path: run(runId), signal: options?.signal }),
    async deleteRun(runId, options) {
      const path = `${run(runId)}${options?.purge ? "?purge=true" : ""}`;
      await call({ method: "DELETE", path, signal: options?.signal, timeoutMs: CASCADE_TIMEOUT_MS });
    },
    // Spec 4.13: a caller's timeout must exceed the hold of a spawn with `waitFor`. This service
    // answers such spawns at once, but one that holds them is given the longest hold the spec knows.
    spawn: (runId, request, options) =>
      call({
        method: "POST",
        path: `${run(runId)}/agents`,
        body: request,
        signal: options?.signal,
        timeoutMs: request.waitFor?.length ? MAX_WAIT_SECONDS * 1000 + WAIT_MARGIN_MS : DEFAULT_TIMEOUT_MS,
      }),
    getAgent: (agentId, options) => call({ method: "GET", path: agent(agentId), signal: options?.signal }),
    getMachine: (agentId, options) =>
      call({ method: "GET", path: `${agent(agentId)}/machine`, signal: options?.signal }),
    setBudget: (agentId, caps, options) =>
      call({ method: "POST", path: `${agent(agentId)}/budget`, body: caps, signal: options?.signal }),
    async prompt(agentId, text, options) {
      await call({ method: "POST", path: `${agent(agentId)}/prompt`, body: { text }, signal: options?.signal });
    },
    steer: (agentId, request, options) =>
      call({
        method: "POST",
        path: `${agent(agentId)}/steer`,
        body: request,
        signal: options?.signal,
        timeoutMs: CASCADE_TIMEOUT_MS,
      }),
    pause: (agentId, scope = "agent", options) => control(agentId, "pause", { scope }, options?.signal),
    resume: (agentId, scope = "agent", options) => control(agentId, "resume", { scope }, options?.signal),
    stop: (agentId, request = {}, options) => control(agentId, "stop", request, options?.signal),
    listPermissions: (runId, state, options) =>
      call({
        method: "GET",
        path: `${run(runId)}/permissions${state ? `?state=${encodeURIComponent(state)}` : ""}`,
        signal: options?.signal,
      }),
    resolvePermission: (agentId, requestId, answer, options) =>
      call({
        method: "POST",
        path: `${agent(agentId)}/permissions/${encodeURIComponent(requestId)}`,
        body: answer,
        signal: options?.signal,
      }),
    result: (agentId, waitSeconds = 0, options) =>
      call({
        method: "GET",
        path: `${agent(agentId)}/result?wait=${waitSeconds}`,
        signal: options?.signal,
        timeoutMs: waitSeconds * 1000 + WAIT_MARGIN_MS,
      }),
    events: (runId, options) => streamEvents(endpoint, runId, options),
  };
}
