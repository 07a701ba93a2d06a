import type { Drain } from "./agent.types.ts";

/**
 * A second drain widens the first: a subtree drain stays one, the earlier deadline stands. The one
 * statement of the rule, for the agent machine and the ledger view alike.
 */
export function widenDrain(current: Drain | null | undefined, next: Drain): Drain {
  return {
    subtree: next.subtree || (current?.subtree ?? false),
    deadline: Math.min(next.deadline, current?.deadline ?? Number.POSITIVE_INFINITY),
  };
}
