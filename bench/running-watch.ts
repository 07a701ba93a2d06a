import type { Ledger, LedgerEvent, LiveEvent } from "../src/ledger/ledger.ts";

/** How long `of` waits for an agent to be `running` before it gives up. */
const RUNNING_TIMEOUT_MS = 600_000;

/**
 * When each agent of a run first became `running` (the event's `at`, epoch ms), read from the
 * ledger: live events and the ones committed before the watch began alike.
 */
export function runningAt(ledger: Ledger, runId: string) {
  const at = new Map<string, number>();
  const ended = new Map<string, string>();
  const waiters = new Set<() => void>();
  const see = (e: LedgerEvent | LiveEvent) => {
    if (!("seq" in e) || e.agentId === null) return;
    if (e.type === "agent_state_changed" && e.data.to === "running" && !at.has(e.agentId)) at.set(e.agentId, e.at);
    else if (e.type === "agent_ended") ended.set(e.agentId, String(e.data.error ?? e.data.outcome));
    else return;
    for (const wake of waiters) wake();
  };
  const unsubscribe = ledger.subscribe(runId, see);
  void (async () => {
    for await (const e of ledger.iterate(runId, 0)) see(e);
  })();
  return {
    /** Resolves with the agent's `running` time; rejects when it ended first or after `timeoutMs`. */
    of: (agentId: string, timeoutMs = RUNNING_TIMEOUT_MS) =>
      new Promise<number>((resolve, reject) => {
        const check = () => {
          const found = at.get(agentId);
          if (found !== undefined) resolve(found);
          else if (ended.has(agentId)) reject(new Error(`agent ${agentId} ended: ${ended.get(agentId)}`));
          else return;
          waiters.delete(check);
          clearTimeout(timer);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`agent ${agentId} not running after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    stop: unsubscribe,
  };
}
