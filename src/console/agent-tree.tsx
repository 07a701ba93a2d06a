import { useEffect } from "preact/hooks";
import { AGENT_STATES, isLive, type PermissionView } from "../swarm-api.ts";
import { AgentLine, nodeTitle } from "./agent-line.tsx";
import { AgentControls, PermissionControls } from "./controls.tsx";
import { forkBlocked } from "./forks.ts";
import { brief } from "./format.ts";
import { type Outcome, OutcomeView, outcomeKey } from "./outcome.tsx";
import type { RunState } from "./run-state.ts";
import { Same } from "./same.tsx";
import { subtreeStates, type TreeRow, toolErrors } from "./tree-rows.ts";
import { useVirtualRows } from "./virtual-rows.ts";

/** A row of one line: what rows not yet drawn count as. */
const ROW_PX = 34;

interface TreeProps {
  state: RunState;
  rows: readonly TreeRow[];
  selected: string | null;
  /** The last control's answer on each agent, kept by the page. */
  outcomes: ReadonlyMap<string, Outcome>;
  onOutcome: (agentId: string, outcome: Outcome) => void;
  /** The run is gone (deleted or purged): nothing is left to control. */
  gone: boolean;
  onToggle: (agentId: string) => void;
  /** The row whose Actions menu is open (one at a time). */
  menu: string | null;
  onMenu: (agentId: string | null) => void;
}

/**
 * The run's spawn tree: one row per agent (`data-agent-id`, `data-state`), children under their
 * parent in spawn order. Only the rows in view are drawn, so 1,000 agents cost what 30 do; a row
 * out of view is not in the page until scrolled to (or found with the filter).
 */
export function AgentTree({ state, rows, selected, outcomes, onOutcome, gone, onToggle, menu, onMenu }: TreeProps) {
  const keys = rows.map((row) => row.record.agentId);
  const list = useVirtualRows(keys, ROW_PX);
  const pending = new Map<string, PermissionView[]>();
  for (const request of state.pendingPermissions())
    pending.set(request.agentId, [...(pending.get(request.agentId) ?? []), request]);
  // The agent opened from a link (or the URL) is brought into view once.
  useEffect(() => {
    if (selected !== null) list.scrollTo(selected);
  }, [selected]);
  useEffect(() => {
    if (menu === null) return;
    const close = (event: KeyboardEvent) => event.key === "Escape" && onMenu(null);
    addEventListener("keydown", close);
    return () => removeEventListener("keydown", close);
  }, [menu]);

  return (
    <div class="tree-scroll" ref={list.scroller} onScroll={list.onScroll} data-testid="tree-scroll">
      <div class="tree-sizer" style={{ height: `${list.height}px` }}>
        <ul class="tree" style={{ transform: `translateY(${list.top}px)` }}>
          {rows.slice(list.start, list.end).map((row) => {
            const { record } = row;
            const live = !gone && isLive(record.state);
            const outcome = outcomes.get(record.agentId);
            const open = live && menu === record.agentId;
            const requests = gone ? [] : (pending.get(record.agentId) ?? []);
            const hidden = row.collapsed ? hiddenText(state, record.agentId) : "";
            const activity = state.activity.get(record.agentId);
            const blocked = open ? forkBlocked(record, state.betweenTurns(record.agentId)) : null;
            // Everything the row shows: rows whose events did not touch them are not drawn again.
            const sig = [
              record.state,
              record.outcome,
              record.pausedBy,
              record.draining,
              record.hibernated,
              record.node,
              record.unreachable,
              record.usage.calls,
              record.subtreeUsage.calls,
              record.pendingPermissions.join(","),
              requests.map((r) => r.requestId).join(","),
              toolErrors(record),
              activity &&
                (activity.kind === "tool" ? activity.toolName : activity.kind === "text" ? activity.text : "…"),
              row.depth,
              row.hasChildren,
              row.context,
              hidden,
              record.agentId === selected,
              open,
              blocked,
              live,
              outcome && outcomeKey(outcome),
            ].join("|");
            return (
              <Same
                key={record.agentId}
                sig={sig}
                draw={() => (
                  <li
                    data-vkey={record.agentId}
                    class={`agent-row${record.agentId === selected ? " selected" : ""}${row.context ? " context" : ""}${open ? " menu-open" : ""}`}
                    data-agent-id={record.agentId}
                    data-state={record.state}
                    data-forked-from={record.forkedFrom?.agentId}
                    title={nodeTitle(record)}
                    style={{ paddingLeft: `${0.4 + row.depth * 1.25}rem` }}
                  >
                    <AgentLine
                      state={state}
                      row={row}
                      hidden={hidden}
                      selected={record.agentId === selected}
                      live={live}
                      onToggle={() => onToggle(record.agentId)}
                      menu={live ? { open, toggle: () => onMenu(open ? null : record.agentId) } : null}
                    />
                    {requests.map((request) => (
                      <div class="approval" key={request.requestId} data-request-id={request.requestId}>
                        <span class="badge attention">approval</span> <strong>{request.tool}</strong>{" "}
                        <code>{brief(request.args, 300)}</code>
                        <PermissionControls request={request} />
                      </div>
                    ))}
                    {open && (
                      <div class="actions-menu">
                        <AgentControls
                          record={record}
                          subtreeMembers={() => state.liveSubtree(record.agentId)}
                          onOutcome={(o) => onOutcome(record.agentId, o)}
                          forkBlocked={blocked}
                        />
                      </div>
                    )}
                    {outcome && <OutcomeView outcome={outcome} />}
                  </li>
                )}
              />
            );
          })}
        </ul>
      </div>
      {rows.length === 0 && <p class="muted">No agent matches the filter.</p>}
    </div>
  );
}

/** "12 below: running 3 · done 9": what a collapsed row hides. */
function hiddenText(state: RunState, agentId: string): string {
  const { below, states } = subtreeStates(state.view, agentId);
  return `${below} below: ${AGENT_STATES.filter((s) => states.has(s))
    .map((s) => `${s} ${states.get(s)}`)
    .join(" · ")}`;
}
