import type { Counter } from "prom-client";
import type { LedgerEvent } from "../ledger/ledger.ts";
import { decodeRunEvent } from "../ledger/run-events.ts";

/** The counters committed ledger events move. */
export interface CommittedCounters {
  spawns: Counter;
  budgetDenials: Counter<"dimension">;
  tokens: Counter<"provider" | "model" | "kind">;
  costUsd: Counter<"provider" | "model">;
}

/** The only types counted: everything else (most events are the harness's) is skipped undecoded. */
const COUNTED_TYPES: ReadonlySet<string> = new Set(["agent_spawned", "budget_denied", "model_usage"]);

/**
 * Count spawns, budget refusals and model usage from the events the ledger committed, so the
 * counters agree with the ledger by construction and no writer has to remember to count. Counters
 * start at zero with each daemon process; Prometheus's `rate` and `increase` take the reset.
 */
export function countCommitted(events: readonly LedgerEvent[], counters: CommittedCounters): void {
  for (const stored of events) {
    if (!COUNTED_TYPES.has(stored.type)) continue;
    const event = decodeRunEvent(stored);
    switch (event?.type) {
      case "agent_spawned":
        counters.spawns.inc();
        break;
      case "budget_denied":
        counters.budgetDenials.inc({ dimension: event.data.dimension });
        break;
      case "model_usage": {
        const { provider, model } = event.data;
        counters.tokens.inc({ provider, model, kind: "input" }, event.data.inputTokens);
        counters.tokens.inc({ provider, model, kind: "output" }, event.data.outputTokens);
        counters.tokens.inc({ provider, model, kind: "cache_read" }, event.data.cacheReadTokens);
        counters.tokens.inc({ provider, model, kind: "cache_write" }, event.data.cacheWriteTokens);
        counters.costUsd.inc({ provider, model }, event.data.costUsd);
        break;
      }
    }
  }
}
