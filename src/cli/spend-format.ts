import type { SpendView, Usage } from "../swarm-api.ts";
import { totalTokens } from "../views/run-view.ts";

/** `950`, `12.3k`, `4.5M`: a token count at a glance. */
export function compactTokens(n: number): string {
  if (n < 1_000) return String(n);
  if (n < 1_000_000) return `${trim(n / 1_000)}k`;
  return `${trim(n / 1_000_000)}M`;
}

const trim = (x: number) => (x < 100 ? x.toFixed(1).replace(/\.0$/, "") : Math.round(x).toString());

/** `$0.0123`, `$12.34`; a spend too small for four decimals is `<$0.0001`, never a misleading `$0.0000`. */
export function compactUsd(usd: number): string {
  if (usd > 0 && usd < 0.0001) return "<$0.0001";
  return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
}

/** `12.3k tok $0.0123` (tokens of every kind, as `maxTokens` counts them); `null` when nothing was called. */
export function usageSummary(usage: Usage): string | null {
  return usage.calls > 0 ? `${compactTokens(totalTokens(usage))} tok ${compactUsd(usage.costUsd)}` : null;
}

/** A dollar amount as set or left: exact to a millionth, without float noise (`$0.30000000000000004`). */
const exactUsd = (usd: number) => `$${Number(usd.toFixed(6))}`;

/**
 * An agent's budget, one line per dimension: its own cap and what it may still spend, which an
 * ancestor's cap can make less than its own (or limit where it has none).
 */
export function budgetLines(agentId: string, budget: SpendView): string[] {
  const line = (name: string, cap: number | null, left: number | null, show: (n: number) => string) => {
    const where =
      left === null ? "no limit" : cap === null ? `${show(left)} left under an ancestor's cap` : `${show(left)} left`;
    return `  ${name.padEnd(11)} ${(cap === null ? "none" : show(cap)).padEnd(14)} (${where})`;
  };
  return [
    `budget of ${agentId}:`,
    line("maxTokens", budget.maxTokens, budget.remainingTokens, String),
    line("maxCostUsd", budget.maxCostUsd, budget.remainingCostUsd, exactUsd),
  ];
}

/** `  spent       12.3k tok $0.0123 in 4 calls (its subtree)`. */
export function spentLine(subtreeUsage: Usage): string {
  const calls = `${subtreeUsage.calls} call${subtreeUsage.calls === 1 ? "" : "s"}`;
  return `  ${"spent".padEnd(11)} ${totalTokens(subtreeUsage)} tok ${exactUsd(subtreeUsage.costUsd)} in ${calls} (it and its descendants)`;
}
