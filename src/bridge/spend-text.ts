import type { SpendView, Usage } from "../swarm-api.ts";
import { totalTokens } from "../views/run-view.ts";

/** Dollars exact to a millionth, without float noise (`$0.30000000000000004`). */
const usd = (n: number) => `$${Number(n.toFixed(6))}`;

/** "1234 tokens, $0.0012 in 3 model call(s)": tokens of every kind, as `maxTokens` counts them. */
export function usageText(usage: Usage): string {
  return `${totalTokens(usage)} tokens, ${usd(usage.costUsd)} in ${usage.calls} model call(s)`;
}

/** "maxTokens 5000 (4200 left), maxCostUsd none (no limit)". */
export function budgetText(budget: SpendView): string {
  const one = (name: string, cap: number | null, left: number | null, unit: (n: number) => string) =>
    `${name} ${cap === null ? "none" : unit(cap)} (${left === null ? "no limit" : `${unit(left)} left`})`;
  return `${one("maxTokens", budget.maxTokens, budget.remainingTokens, String)}, ${one("maxCostUsd", budget.maxCostUsd, budget.remainingCostUsd, usd)}`;
}
