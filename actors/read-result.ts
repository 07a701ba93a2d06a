import { once } from "node:events";
import type { ResultView } from "../src/swarm-api.ts";
import { runOf } from "./controls.ts";
import type { ServiceCore } from "./service-core.ts";

/** A result: settled once a turn settled or the agent ended; waits up to `waitSeconds` while pending. */
export async function readResult(core: ServiceCore, agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView> {
  const run = runOf(core, agentId);
  const settled = () => {
    const record = run.view.agents.get(agentId)!;
    return record.settled !== null || record.outcome !== null;
  };
  if (!settled() && waitSeconds > 0) {
    const timeout = AbortSignal.timeout(waitSeconds * 1000);
    const stopWaiting = signal ? AbortSignal.any([timeout, signal]) : timeout;
    await once(core.waiters, `settled:${agentId}`, { signal: stopWaiting }).catch(() => undefined);
  }
  if (!settled()) return { agentId, state: "pending", outcome: null, resultRef: null, result: null };
  const record = run.view.agents.get(agentId)!;
  const resultRef = record.settled?.resultRef ?? null;
  return {
    agentId,
    state: "settled",
    outcome: record.settled?.outcome ?? record.outcome,
    resultRef,
    result: resultRef ? core.results.read(agentId) : null,
  };
}
