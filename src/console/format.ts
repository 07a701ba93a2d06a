import type { SpendView, Usage } from "../swarm-api.ts";

export const clock = (at: number): string => new Date(at).toLocaleTimeString([], { hour12: false });
export const when = (at: number): string => new Date(at).toLocaleString([], { hour12: false });

/** "12.3k tok · $0.0123", or "" when no model call was made. */
export function usageText(usage: Usage): string {
  if (usage.calls === 0) return "";
  const tokens = usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  const shown = tokens >= 10_000 ? `${(tokens / 1000).toFixed(1)}k` : String(tokens);
  return `${shown} tok · $${usage.costUsd.toFixed(4)} · ${usage.calls} call${usage.calls === 1 ? "" : "s"}`;
}

/** One line of JSON cut to `max` characters; what will not serialize is said so. */
export function brief(value: unknown, max = 240): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = "(not serializable)";
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** "tokens: cap 500000, 498800 left · cost: no cap": an agent's spend caps and what is left of them. */
export function budgetText(budget: SpendView): string {
  const part = (what: string, cap: number | null, left: number | null, show: (n: number) => string) =>
    `${what}: ${cap === null ? "no own cap" : `cap ${show(cap)}`}${left === null ? "" : `, ${show(left)} left`}`;
  const dollars = (n: number) => `$${n.toFixed(4)}`;
  return `${part("tokens", budget.maxTokens, budget.remainingTokens, String)} · ${part("cost", budget.maxCostUsd, budget.remainingCostUsd, dollars)}`;
}
