import { EventEmitter, once } from "node:events";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { ResultView } from "../../src/swarm-api.ts";
import type { AgentRecord } from "../../src/views/run-view.ts";

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
