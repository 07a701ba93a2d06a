import { EventEmitter, once } from "node:events";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { ResultView, WaitRequest, WaitResponse } from "../../src/swarm-api.ts";
import type { AgentRecord } from "../../src/views/run-view.ts";

/** The event every fold emits, for waits on several agents. */
const ANY = Symbol("any");

/**
 * Agents' results as the run answers them (`GET /agents/:id/result`, an agent's `await_result`):
 * settled once the ledger view has a turn's result or the agent's end, read from the result store.
 * A waiting caller wakes when the fold brings either (`folded`).
 */
export class Results {
  /** Emits `<agentId>` once the ledger has the agent's result settled or its end. */
  readonly #settled = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly agents: ReadonlyMap<string, AgentRecord>,
    private readonly store: Pick<ResultStore, "read">,
  ) {}

  /** The view folded a `handle_settled` or an `agent_ended` of the agent. */
  folded(agentId: string): void {
    this.#settled.emit(agentId);
    this.#settled.emit(ANY);
  }

  /**
   * `POST /runs/:runId/wait`: every agent's result once all settled (`all`), or the first to settle
   * with success (`first`; every result, and no winner, once all settled and none succeeded);
   * whatever is there when `timeoutMs` passes or `signal` aborts, the unfinished ones `pending`.
   */
  async waitMany(
    request: Pick<WaitRequest, "agentIds" | "mode" | "timeoutMs">,
    signal?: AbortSignal,
  ): Promise<WaitResponse> {
    const ids = [...new Set(request.agentIds)];
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const until = signal ? AbortSignal.any([timeout, signal]) : timeout;
    for (;;) {
      const winner = request.mode === "first" ? this.#firstSuccess(ids) : null;
      if (winner !== null) return { results: [await this.#waitResult(winner)], winner };
      if (ids.every((id) => this.#isSettled(id)) || until.aborted) break;
      // Folds come in synchronously: nothing can settle between the look above and this listener.
      await once(this.#settled, ANY, { signal: until }).catch(() => undefined);
    }
    return { results: await Promise.all(ids.map((id) => this.#waitResult(id))), winner: null };
  }

  async #waitResult(agentId: string): Promise<WaitResponse["results"][number]> {
    const { state, outcome, result } = await this.result(agentId, 0);
    return { agentId, state, outcome, result };
  }

  #isSettled(agentId: string): boolean {
    const record = this.agents.get(agentId);
    return record !== undefined && (record.settled !== null || record.outcome !== null);
  }

  /** Of `ids`, the one whose first success came first in the ledger (list order breaks ties); null when none succeeded. */
  #firstSuccess(ids: string[]): string | null {
    let best: { id: string; at: number } | null = null;
    for (const id of ids) {
      const record = this.agents.get(id);
      if (!record || (record.settled?.outcome ?? record.outcome) !== "success") continue;
      const at = record.succeededAt ?? Number.MAX_SAFE_INTEGER;
      if (!best || at < best.at) best = { id, at };
    }
    return best?.id ?? null;
  }

  /** The agent's result, waiting up to `waitSeconds` while it is pending (or until `signal` aborts). */
  async result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView> {
    const record = () => this.agents.get(agentId)!;
    const settled = () => record().settled !== null || record().outcome !== null;
    if (!settled() && waitSeconds > 0) {
      const timeout = AbortSignal.timeout(waitSeconds * 1000);
      const until = signal ? AbortSignal.any([timeout, signal]) : timeout;
      await once(this.#settled, agentId, { signal: until }).catch(() => undefined);
    }
    if (!settled()) return { agentId, state: "pending", outcome: null, resultRef: null, result: null };
    const resultRef = record().settled?.resultRef ?? null;
    return {
      agentId,
      state: "settled",
      outcome: record().settled?.outcome ?? record().outcome,
      resultRef,
      result: resultRef ? this.store.read(agentId) : null,
    };
  }
}
