import { Fragment } from "preact";
import type { MachineView } from "../swarm-api.ts";
import { brief, clock, count, dollars } from "./format.ts";

const MESSAGES: ReadonlyArray<[key: string, label: string]> = [
  ["userMessages", "user"],
  ["assistantMessages", "assistant"],
  ["toolCalls", "tool calls"],
  ["toolResults", "tool results"],
  ["totalMessages", "total"],
];
const TOKENS: ReadonlyArray<[key: string, label: string]> = [
  ["input", "input"],
  ["output", "output"],
  ["cacheRead", "cache read"],
  ["cacheWrite", "cache write"],
  ["total", "total"],
];
const SHOWN = new Set(["sessionId", "tokens", "cost", "contextUsage", ...MESSAGES.map(([key]) => key)]);

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);
const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
/** A number rounded for reading; anything else as one short line. */
const shown = (value: unknown): string => {
  const n = num(value);
  if (n === null) return brief(value, 120);
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(2);
};

/**
 * pi-coding-agent's session statistics (spec section 2.2) as tables: messages by kind, tokens by
 * kind, cost and context use, numbers rounded; fields this page does not know follow as they are.
 */
export function SessionStats({ stats }: { stats: Record<string, unknown> }) {
  const tokens = record(stats.tokens);
  const context = record(stats.contextUsage);
  const cost = num(stats.cost);
  const contextTokens = num(context.tokens);
  const window = num(context.contextWindow);
  const percent = num(context.percent) ?? (contextTokens !== null && window ? (contextTokens / window) * 100 : null);
  const other = Object.entries(stats).filter(([key]) => !SHOWN.has(key));
  return (
    <div class="stats" data-testid="session-stats">
      <table class="small-table">
        <caption>Messages</caption>
        <tbody>
          {MESSAGES.filter(([key]) => num(stats[key]) !== null).map(([key, label]) => (
            <tr key={key}>
              <th scope="row">{label}</th>
              <td class="num">{shown(stats[key])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <table class="small-table" aria-label="Tokens">
        <caption>Tokens</caption>
        <tbody>
          {TOKENS.filter(([key]) => num(tokens[key]) !== null).map(([key, label]) => (
            <tr key={key}>
              <th scope="row">{label}</th>
              <td class="num" title={shown(tokens[key])}>
                {count(num(tokens[key]) ?? 0)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <dl class="facts">
        {cost !== null && (
          <>
            <dt>Cost</dt>
            <dd>{dollars(cost)}</dd>
          </>
        )}
        {(contextTokens !== null || percent !== null) && (
          <>
            <dt>Context</dt>
            <dd>
              {contextTokens !== null && `${count(contextTokens)} tokens`}
              {window !== null && ` of ${count(window)}`}
              {percent !== null && ` (${percent.toFixed(1)} %)`}
            </dd>
          </>
        )}
        {typeof stats.sessionId === "string" && (
          <>
            <dt>Session</dt>
            <dd class="mono">{stats.sessionId}</dd>
          </>
        )}
        {other.map(([key, value]) => (
          <Fragment key={key}>
            <dt>{key}</dt>
            <dd>{shown(value)}</dd>
          </Fragment>
        ))}
      </dl>
    </div>
  );
}

/** XState's state value as a path: `live.running.idle`; parallel regions joined with ` + `. */
export function statePath(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return "—";
  return Object.entries(value)
    .map(([key, inner]) => {
      const rest = statePath(inner);
      return rest === "—" || (typeof inner === "object" && inner !== null && Object.keys(inner).length === 0)
        ? key
        : `${key}.${rest}`;
    })
    .join(" + ");
}

/** The agent's machine as the daemon runs it: an offline stand-in for the Stately inspector. */
export function MachineTable({ machine }: { machine: MachineView }) {
  return (
    <div class="machine">
      <p>
        <code data-testid="machine-value">{statePath(machine.value)}</code>{" "}
        {machine.tags.map((tag) => (
          <span key={tag} class="badge">
            {tag}
          </span>
        ))}
        {!machine.running && <span class="muted"> (no machine runs for it now)</span>}
      </p>
      <table class="small-table">
        <thead>
          <tr>
            <th>At</th>
            <th>Event</th>
            <th>To</th>
          </tr>
        </thead>
        <tbody>
          {[...machine.transitions].reverse().map((t, i) => (
            <tr key={`${t.at}-${i}`}>
              <td>{clock(t.at)}</td>
              <td class="mono">{t.event}</td>
              <td class="mono">{statePath(t.value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
