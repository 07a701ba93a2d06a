import type { Ledger } from "../src/ledger/ledger.ts";

/** Follows a run's ledger and tells when agents reach `running` (or end before that). */
export interface AgentWatch {
  /** Resolves once the agent is running; rejects when it ends first or `timeoutMs` passes. */
  running(agentId: string, timeoutMs: number): Promise<void>;
  runningCount(): number;
  stop(): void;
}

export function watchAgents(ledger: Ledger, runId: string): AgentWatch {
  const running = new Set<string>();
  const ended = new Map<string, string>();
  const waiters = new Map<string, () => void>();
  const unsubscribe = ledger.subscribe(runId, (e) => {
    if (!e.persisted || e.agentId === null) return;
    if (e.type === "agent_state_changed" && e.data.to === "running") running.add(e.agentId);
    else if (e.type === "agent_ended") ended.set(e.agentId, String(e.data.error ?? e.data.outcome));
    else return;
    waiters.get(e.agentId)?.();
  });
  return {
    running: (agentId, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (running.has(agentId)) resolve();
          else if (ended.has(agentId)) reject(new Error(`agent ${agentId} ended: ${ended.get(agentId)}`));
          else return;
          waiters.delete(agentId);
          clearTimeout(timer);
        };
        const timer = setTimeout(() => {
          waiters.delete(agentId);
          reject(new Error(`agent ${agentId} not running after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.set(agentId, check);
        check();
      }),
    runningCount: () => running.size,
    stop: unsubscribe,
  };
}
