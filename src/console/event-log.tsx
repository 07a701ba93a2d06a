import { useState } from "preact/hooks";
import { clock } from "./format.ts";
import type { RunState } from "./run-state.ts";

/** Rows drawn at most: the newest that pass the filters. */
const SHOWN = 1_000;

type Kind = "all" | "persisted" | "ephemeral";

/**
 * The run's events, newest first: persisted ones (with their seq, `data-seq`) and the live
 * ephemeral ones (text, tool output), filtered by agent, type and kind.
 */
export function EventLog({ state }: { state: RunState }) {
  const [agent, setAgent] = useState("");
  const [type, setType] = useState("");
  const [kind, setKind] = useState<Kind>("all");
  const names = new Map([...state.view.agents.values()].map((r) => [r.agentId, r.specName]));
  const rows = [];
  for (let i = state.log.length - 1; i >= 0 && rows.length < SHOWN; i--) {
    const entry = state.log[i];
    if (entry === undefined) continue;
    if (agent && entry.agentId !== agent) continue;
    if (type && entry.type !== type) continue;
    if (kind === "persisted" && entry.seq === null) continue;
    if (kind === "ephemeral" && entry.seq !== null) continue;
    rows.push(entry);
  }
  return (
    <section class="event-log" aria-label="Event log">
      <div class="log-head">
        <h2>Events</h2>
        <label>
          Agent{" "}
          <select aria-label="Filter by agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
            <option value="">all</option>
            {[...names].map(([id, name]) => (
              <option key={id} value={id}>
                {name} ({id})
              </option>
            ))}
          </select>
        </label>
        <label>
          Type{" "}
          <select aria-label="Filter by type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">all</option>
            {[...state.types].sort().map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind{" "}
          <select aria-label="Filter by kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
            <option value="all">all</option>
            <option value="persisted">persisted</option>
            <option value="ephemeral">live only (ephemeral)</option>
          </select>
        </label>
        <span class="muted">
          {rows.length} shown of {state.log.length} kept
        </span>
      </div>
      <table class="events">
        <tbody>
          {rows.map((entry) => (
            <tr
              key={entry.key}
              data-seq={entry.seq ?? undefined}
              data-type={entry.type}
              class={entry.seq === null ? "ephemeral" : ""}
            >
              <td class="mono muted">{entry.seq ?? "·"}</td>
              <td class="muted">{clock(entry.at)}</td>
              <td class="mono">{entry.type}</td>
              <td>{entry.agentId ? (names.get(entry.agentId) ?? entry.agentId) : "run"}</td>
              <td class="data">{entry.summary}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
