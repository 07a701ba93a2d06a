import { ancestorsOf, type ParentMap } from "./tree.ts";

export interface Budget {
  spawnDepth: number;
  maxAgents: number;
}

export type BudgetDecision =
  | { ok: true; child: Budget }
  | { ok: false; dimension: "spawnDepth" | "maxAgents"; remaining: number };

export interface BudgetInput {
  parentId: string;
  parents: ParentMap;
  /** Effective budget of an agent of the run (looked up, not copied: a run may hold 10,000). */
  budgetOf: (agentId: string) => Budget | undefined;
  /** Accepted spawns under each agent, all descendants counted (ended ones included). */
  descendants: Readonly<Record<string, number>>;
  /** Explicit limits from the child's spec and the request: they can only tighten. */
  tighten: Array<Partial<Budget> | undefined>;
}

/**
 * Decide a spawn under `parentId` (docs/design.md "Budgets"): refused on `spawnDepth` when the parent
 * has no depth left, on `maxAgents` when the spawn would exceed the cap of the parent or of any
 * ancestor. An accepted child gets what its parent has left (depth − 1, the parent's remaining
 * agents after this spawn), tightened by explicit limits.
 */
export function decideSpawn(input: BudgetInput): BudgetDecision {
  const parent = input.budgetOf(input.parentId);
  if (!parent) throw new Error(`no budget for ${input.parentId}`);
  if (parent.spawnDepth <= 0) return { ok: false, dimension: "spawnDepth", remaining: 0 };
  let remaining = Number.POSITIVE_INFINITY;
  for (const id of [input.parentId, ...ancestorsOf(input.parentId, input.parents)]) {
    const budget = input.budgetOf(id);
    if (!budget) continue;
    remaining = Math.min(remaining, budget.maxAgents - (input.descendants[id] ?? 0));
  }
  if (remaining < 1) return { ok: false, dimension: "maxAgents", remaining: Math.max(0, remaining) };
  let child: Budget = { spawnDepth: parent.spawnDepth - 1, maxAgents: remaining - 1 };
  for (const limit of input.tighten) child = tightenBudget(child, limit);
  return { ok: true, child };
}

/** Apply explicit limits that may only lower a budget. */
function tightenBudget(budget: Budget, limit: Partial<Budget> | undefined): Budget {
  return {
    spawnDepth: Math.min(budget.spawnDepth, limit?.spawnDepth ?? budget.spawnDepth),
    maxAgents: Math.min(budget.maxAgents, limit?.maxAgents ?? budget.maxAgents),
  };
}
