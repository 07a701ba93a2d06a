import type { Fact } from "../machines/agent.types.ts";
import type { ResultStore } from "../src/results/result-store.ts";

export interface FactEvents {
  events: Array<{ type: string; agentId: string; data: Record<string, unknown> }>;
  put: Array<{ key: string; value: string }>;
}

/** Ledger key of how an agent ends, written before its sandbox is closed. */
export const endingKey = (agentId: string) => `ending!${agentId}`;

/** Ledger key of the newest harness event recorded for an agent. */
export const hseqKey = (agentId: string) => `hseq!${agentId}`;

/**
 * Ledger key of how many prompts an agent's harness acknowledged over its life. With the agent's
 * `handle_settled` events it tells recovery how many turns the harness still owes; it is written by
 * the service itself, so nothing in the sandbox can change it.
 */
export const promptsKey = (agentId: string) => `prompts!${agentId}`;

/**
 * The ledger events (spec §6.1) that state a machine fact. A settled turn's text is stored first,
 * so `handle_settled` never announces a result that cannot be read.
 */
export function factEvents(agentId: string, fact: Fact, results: ResultStore, now: number): FactEvents {
  switch (fact.kind) {
    case "state":
      return one(agentId, "agent_state_changed", { from: fact.from, to: fact.to, reason: fact.reason });
    case "provisioned":
      return one(agentId, "agent_provisioned", { sandboxId: fact.sandboxId });
    case "steered":
      return one(agentId, "agent_steered", { message: fact.message });
    case "settled": {
      const resultRef = fact.text === null ? null : results.write(agentId, fact.text);
      return { ...one(agentId, "handle_settled", { outcome: fact.outcome, resultRef }), put: [{ key: hseqKey(agentId), value: String(fact.hseq) }] };
    }
    case "ended":
      return one(agentId, "agent_ended", { outcome: fact.outcome, endedAt: now, error: fact.error ?? null });
  }
}

function one(agentId: string, type: string, data: Record<string, unknown>): FactEvents {
  return { events: [{ type, agentId, data }], put: [] };
}
