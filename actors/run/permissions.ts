import { createHash } from "node:crypto";
import { EventEmitter, once } from "node:events";
import { SwarmError } from "../../src/errors.ts";
import { capEventData } from "../../src/harness/wire-schemas.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type {
  PermissionAnswer,
  PermissionBy,
  PermissionDecision,
  PermissionState,
  PermissionView,
} from "../../src/swarm-api.ts";
import type { Supervisor } from "./supervisor.ts";

/** What the approval inbox needs of the run. */
export interface PermissionDeps {
  /** Every request of the run by id, as the ledger view folds them (updated in place). */
  requests: ReadonlyMap<string, PermissionView>;
  /** The agent's pending requests, as the ledger view folds them. */
  pendingOf(agentId: string): readonly string[];
  supervisor: Pick<Supervisor, "requireLive" | "send">;
  /** The agent's `approveTimeoutMs` (its own or its nearest ancestor's), if any. */
  timeoutOf(agentId: string): number | undefined;
  append(events: RunEventInput[]): Promise<unknown>;
  log(message: string): void;
}

/** What an agent's gated call is told once its request is resolved. */
export interface Decision {
  decision: PermissionDecision;
  message: string | null;
  by: PermissionBy;
}

/** What the model reads as the tool's error when a deny came without a message. */
const DENIED: Record<PermissionBy, string> = {
  operator: "the operator denied this tool call",
  stop: "the agent was stopped before anyone decided on this tool call",
  "run-deleted": "the run was deleted before anyone decided on this tool call",
  timeout: "nobody decided on this tool call in time (approveTimeoutMs), so it was denied",
};

/** The text a denied call fails with. */
export const denialText = (decision: Decision): string => decision.message ?? DENIED[decision.by];

/**
 * A request's id: the asking agent, the harness's call id and the call itself. The call a harness
 * sends again after a reconnect or a daemon restart (same id, same call) finds its request again,
 * so it is asked once and decided once; a different call under a reused id is a new request.
 */
export function permissionId(agentId: string, callId: string, tool: string, args: unknown): string {
  const digest = createHash("sha256")
    .update(`${agentId}\0${callId}\0${tool}\0${JSON.stringify(args ?? {})}`)
    .digest("hex");
  return `p_${digest.slice(0, 24)}`;
}

/**
 * The run's approval inbox. A request is recorded (`permission_request`) before anything waits on
 * it, and resolved once (`permission_resolved`) by the operator, by `approveTimeoutMs`, or by the
 * agent's end; both are ledger events, so the inbox is the run view's fold of them and a restart
 * finds every pending request still pending. Waiting for a decision is paused time for the agent's
 * quiet-turn limit (`approval.hold` / `approval.release` to its machine).
 */
export class Permissions {
  /** Emits `<requestId>` once its `permission_resolved` is in the view. */
  readonly #decided = new EventEmitter().setMaxListeners(0);
  /** Requests whose `permission_request` is being written: a call re-sent meanwhile waits for it. */
  readonly #recording = new Map<string, Promise<void>>();
  /** Requests whose resolution is being written: a second answer is a 409 at once. */
  readonly #resolving = new Set<string>();
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: PermissionDeps) {}

  /** The ledger folded a `permission_resolved`: wake whoever waits on it. */
  folded(requestId: string): void {
    this.#decided.emit(requestId);
  }

  /**
   * The decision on one gated call: recorded as a new request, or the request the same call made
   * before (pending: wait for it; resolved: its decision). Resolves when decided; rejects only when
   * `signal` aborts (the harness connection went away) or the request could not be recorded.
   */
  async ask(
    agentId: string,
    callId: string,
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Decision> {
    const requestId = permissionId(agentId, callId, tool, args);
    if (!this.deps.requests.has(requestId)) {
      let recording = this.#recording.get(requestId);
      if (!recording) {
        recording = this.#record(agentId, requestId, tool, args).finally(() => this.#recording.delete(requestId));
        this.#recording.set(requestId, recording);
      }
      await recording;
    }
    const request = this.deps.requests.get(requestId)!;
    // The view's record is updated in place by the fold; `folded` wakes this loop.
    while (request.state === "pending") await once(this.#decided, requestId, { signal });
    return { decision: request.decision!, message: request.message, by: request.by! };
  }

  async #record(agentId: string, requestId: string, tool: string, args: Record<string, unknown>): Promise<void> {
    this.deps.supervisor.requireLive(agentId);
    const timeoutMs = this.deps.timeoutOf(agentId);
    const expiresAt = timeoutMs === undefined ? null : Date.now() + timeoutMs;
    // Capped like every event's data: a call's arguments can be a whole file.
    await this.deps.append([
      { type: "permission_request", agentId, data: { requestId, tool, args: capEventData(args), expiresAt } },
    ]);
    this.deps.supervisor.send(agentId, { type: "approval.hold" });
    if (expiresAt !== null) this.#arm(requestId, expiresAt);
  }

  /** Deny the request at `expiresAt` unless it was resolved before. */
  #arm(requestId: string, expiresAt: number): void {
    const request = this.deps.requests.get(requestId);
    if (request?.state !== "pending" || this.#timers.has(requestId)) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(requestId);
        this.resolve(request.agentId, requestId, { decision: "deny" }, "timeout").catch((err: unknown) => {
          // Answered in the same instant by someone else: nothing was lost.
          if (!(err instanceof SwarmError && err.code === "PERMISSION_RESOLVED")) this.#lost(requestId, err);
        });
      },
      Math.max(0, expiresAt - Date.now()),
    );
    this.#timers.set(requestId, timer.unref());
  }

  /**
   * Resolve a pending request of `agentId`: `PERMISSION_NOT_FOUND` when the agent has no such
   * request, `PERMISSION_RESOLVED` when it is resolved or being resolved.
   */
  async resolve(
    agentId: string,
    requestId: string,
    answer: PermissionAnswer,
    by: PermissionBy,
  ): Promise<PermissionView> {
    const request = this.deps.requests.get(requestId);
    if (!request || request.agentId !== agentId)
      throw new SwarmError("PERMISSION_NOT_FOUND", `agent ${agentId} has no approval request ${requestId}`);
    if (request.state === "resolved" || this.#resolving.has(requestId)) {
      throw new SwarmError(
        "PERMISSION_RESOLVED",
        `approval request ${requestId} was already resolved${request.by ? ` (${request.decision} by ${request.by})` : ""}`,
      );
    }
    await this.#write(agentId, [requestId], answer, by);
    this.deps.supervisor.send(agentId, { type: "approval.release" });
    return { ...request, args: { ...request.args } };
  }

  /**
   * The agent ended: what it still waited for is denied, by `stop` or `run-deleted`, in one write
   * queued in the same tick as the end, so a stop's answer (which waits for the writer) comes after it.
   */
  async agentEnded(agentId: string, by: "stop" | "run-deleted"): Promise<void> {
    const pending = this.deps.pendingOf(agentId).filter((id) => !this.#resolving.has(id));
    if (pending.length === 0) return;
    await this.#write(agentId, pending, { decision: "deny" }, by).catch((err: unknown) =>
      this.#lost(pending.join(", "), err),
    );
  }

  /** Record the resolution of `requestIds` (pending, not being resolved); no second answer gets in meanwhile. */
  async #write(
    agentId: string,
    requestIds: readonly string[],
    answer: PermissionAnswer,
    by: PermissionBy,
  ): Promise<void> {
    for (const requestId of requestIds) this.#resolving.add(requestId);
    try {
      const message = answer.message ?? null;
      await this.deps.append(
        requestIds.map((requestId) => ({
          type: "permission_resolved",
          agentId,
          data: { requestId, decision: answer.decision, message, by },
        })),
      );
    } finally {
      for (const requestId of requestIds) this.#resolving.delete(requestId);
    }
    for (const requestId of requestIds) {
      clearTimeout(this.#timers.get(requestId));
      this.#timers.delete(requestId);
    }
  }

  /** After a restart: timeouts armed again for the pending requests of live agents. */
  rearm(): void {
    for (const request of this.deps.requests.values()) {
      if (request.state === "pending" && request.expiresAt !== null) this.#arm(request.requestId, request.expiresAt);
    }
  }

  /** The inbox, oldest first. */
  list(state: PermissionState | "all"): PermissionView[] {
    const all = [...this.deps.requests.values()];
    return (state === "all" ? all : all.filter((p) => p.state === state)).map((p) => ({ ...p, args: { ...p.args } }));
  }

  close(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #lost(requestIds: string, err: unknown): void {
    this.deps.log(
      `approval request(s) ${requestIds} could not be resolved: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
