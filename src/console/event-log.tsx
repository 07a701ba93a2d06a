import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { clock } from "./format.ts";
import type { LogEntry, RunState } from "./run-state.ts";
import { Same } from "./same.tsx";
import { useVirtualRows } from "./virtual-rows.ts";

const ROW_PX = 24;
/** The log is drawn again at most this often: while 1,000 agents stream, every frame would be too many. */
const REDRAW_MS = 250;

type Kind = "all" | "persisted" | "ephemeral";

/**
 * The run's events, newest first: persisted ones (with their seq, `data-seq`) and the live
 * ephemeral ones (text, tool output), filtered by agent, type and kind. Only the lines in view are
 * drawn; scroll to see the rest of the kept ones. `data-received` on the section says how many
 * events of the run it shows.
 */
export function EventLog({ state }: { state: RunState }) {
  const received = useThrottled(state.received, REDRAW_MS);
  return <Same sig={String(received)} draw={() => <Log state={state} received={received} />} />;
}

/** `value`, changed at most every `ms` (the newest value once the time is up). */
function useThrottled<T>(value: T, ms: number): T {
  const [shown, setShown] = useState(value);
  const last = useRef(0);
  useEffect(() => {
    if (value === shown) return;
    const timer = setTimeout(
      () => {
        last.current = Date.now();
        setShown(value);
      },
      Math.max(0, last.current + ms - Date.now()),
    );
    return () => clearTimeout(timer);
  }, [value, shown]);
  return shown;
}

function Log({ state, received }: { state: RunState; received: number }) {
  const [agent, setAgent] = useState("");
  const [type, setType] = useState("");
  const [kind, setKind] = useState<Kind>("all");
  const agents = state.view.agents;
  // 1,000 options are built again only when an agent comes.
  const agentOptions = useMemo(
    () =>
      [...agents.values()].map((r) => (
        <option key={r.agentId} value={r.agentId}>
          {r.specName} ({r.agentId})
        </option>
      )),
    [agents, agents.size],
  );
  const rows: LogEntry[] = [];
  for (let i = state.log.length - 1; i >= 0; i--) {
    const entry = state.log[i];
    if (entry === undefined) continue;
    if (agent && entry.agentId !== agent) continue;
    if (type && entry.type !== type) continue;
    if (kind === "persisted" && entry.seq === null) continue;
    if (kind === "ephemeral" && entry.seq !== null) continue;
    rows.push(entry);
  }
  const list = useVirtualRows(
    rows.map((entry) => String(entry.key)),
    ROW_PX,
    true,
  );
  return (
    <section class="event-log" aria-label="Event log" data-received={received}>
      <div class="log-head">
        <h2>Events</h2>
        <label>
          Agent{" "}
          <select aria-label="Filter by agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
            <option value="">all</option>
            {agentOptions}
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
        <span class="muted" data-testid="log-count">
          {rows.length} shown of {state.log.length} kept
        </span>
      </div>
      <div class="log-scroll" ref={list.scroller} onScroll={list.onScroll} data-testid="log-scroll">
        <div class="tree-sizer" style={{ height: `${list.height}px` }}>
          <div class="events" style={{ transform: `translateY(${list.top}px)` }}>
            {rows.slice(list.start, list.end).map((entry) => (
              <div
                key={entry.key}
                data-vkey={String(entry.key)}
                data-seq={entry.seq ?? undefined}
                data-type={entry.type}
                class={`log-row${entry.seq === null ? " ephemeral" : ""}`}
              >
                <span class="mono muted">{entry.seq ?? "·"}</span>
                <span class="muted">{clock(entry.at)}</span>
                <span class="mono">{entry.type}</span>
                <span class="log-agent">
                  {entry.agentId ? (agents.get(entry.agentId)?.specName ?? entry.agentId) : "run"}
                </span>
                <span class="data" title={entry.summary}>
                  {entry.summary}
                </span>
              </div>
            ))}
          </div>
        </div>
      </div>
    </section>
  );
}
