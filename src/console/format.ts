import type { SpendView, Usage } from "../swarm-api.ts";

// One formatter each: `toLocaleTimeString` builds a new one per call, the page's costliest call while events stream.
const CLOCK = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
const WHEN = new Intl.DateTimeFormat([], {
  year: "numeric",
  month: "numeric",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hour12: false,
});
export const clock = (at: number): string => CLOCK.format(at);
export const when = (at: number): string => WHEN.format(at);

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

/** 950, 12.3k, 4.56M: a count of tokens at a glance. */
export function count(n: number): string {
  if (n < 1_000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1_000).toFixed(n < 10_000 ? 2 : 1)}k`;
  return `${(n / 1_000_000).toFixed(n < 10_000_000 ? 2 : 1)}M`;
}

/** $0.0123 below a dollar, $12.35 above. */
export const dollars = (usd: number): string => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;

/** "12.3k tok · $0.0123", or "" when no model call was made: a row's spend. */
export function spendText(usage: Usage): string {
  if (usage.calls === 0) return "";
  const tokens = usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  return `${count(tokens)} tok · ${dollars(usage.costUsd)}`;
}

/** 1.2 s, 3 min 4 s, 2 h 5 min: a span of time. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** "after turn 2", or "at spawn_agent call toolu_… in turn 3" for a fork from inside a turn. */
export function forkPointText(point: unknown): string {
  if (typeof point !== "object" || point === null) return "";
  const { turn, toolCallId } = point as Record<string, unknown>;
  if (typeof turn !== "number") return "";
  return typeof toolCallId === "string" ? `at spawn_agent call ${toolCallId} in turn ${turn}` : `after turn ${turn}`;
}
