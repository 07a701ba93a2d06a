import type { AgentRecord } from "../views/run-view.ts";
import { clock, forkPointText, spendText } from "./format.ts";
import { runHref } from "./route.ts";
import type { Activity, RunState } from "./run-state.ts";
import { type TreeRow, toolErrors } from "./tree-rows.ts";

interface LineProps {
  state: RunState;
  row: TreeRow;
  /** What a collapsed row hides ("12 below: running 3 · done 9"); "" when expanded. */
  hidden: string;
  selected: boolean;
  live: boolean;
  onToggle: () => void;
  /** The Actions menu's button; null when the agent takes no control (ended, or the run gone). */
  menu: { open: boolean; toggle: () => void } | null;
}

/**
 * One agent's line in the tree: the fold button, its name (a link that opens its panel), id, one
 * badge for its state (its outcome once ended), what it is doing, its own and its subtree's spend,
 * and the Actions menu's button. A collapsed row says what it hides: its agents by state.
 */
export function AgentLine({ state, row, hidden, selected, live, onToggle, menu }: LineProps) {
  const { record } = row;
  const errors = toolErrors(record);
  return (
    <div class="agent-line">
      {row.hasChildren ? (
        <button
          type="button"
          class="fold"
          aria-expanded={!row.collapsed}
          aria-label={row.collapsed ? "Expand" : "Collapse"}
          title={row.collapsed ? "Show the agents under it" : "Hide the agents under it"}
          onClick={onToggle}
        >
          {row.collapsed ? "▸" : "▾"}
        </button>
      ) : (
        <span class="fold" />
      )}
      <a class="agent-name" href={runHref(record.runId, record.agentId)} aria-current={selected ? "true" : undefined}>
        {record.specName}
      </a>
      <span class="mono muted agent-id">{record.agentId}</span>
      <StateBadge record={record} />
      {record.forkedFrom && (
        <span
          class="badge fork"
          data-testid="fork-badge"
          title={`Forked from ${state.agent(record.forkedFrom.agentId)?.specName ?? "its parent"} (${record.forkedFrom.agentId}) ${forkPointText(record.forkedFrom.forkPoint)}`}
        >
          fork
        </span>
      )}
      {record.draining && <span class="badge attention">draining</span>}
      {record.hibernated && <span class="badge">hibernated</span>}
      {record.unreachable && (
        <span class="badge attention" title={`The daemon cannot reach node ${record.node ?? "?"} its sandbox runs on`}>
          unreachable
        </span>
      )}
      {errors > 0 && (
        <span class="badge failed" title="Tool calls swarmd refused or failed (tool_refused events)">
          {errors} tool error{errors === 1 ? "" : "s"}
        </span>
      )}
      {live && <Doing state={state} record={record} />}
      {hidden && (
        <span class="hidden-count" data-testid="collapsed-counts">
          {hidden}
        </span>
      )}
      <span class="line-end">
        <Spend record={record} />
        {menu && (
          <button type="button" class="actions" aria-expanded={menu.open} aria-haspopup="true" onClick={menu.toggle}>
            Actions
          </button>
        )}
      </span>
    </div>
  );
}

/** The tree row's tooltip: the node the agent's sandbox runs on, once provisioned. */
export function nodeTitle(record: AgentRecord): string | undefined {
  if (record.node === undefined) return undefined;
  return `node ${record.node}${record.unreachable ? " (unreachable)" : ""}`;
}

/** The state while it lives (who paused it, when paused); once ended, its outcome alone (the state says no more). */
function StateBadge({ record }: { record: AgentRecord }) {
  if (record.outcome !== null)
    return (
      <span class={`badge outcome-${record.outcome}`} data-testid="agent-state" title={`${record.state}`}>
        {record.outcome}
      </span>
    );
  return (
    <span class={`badge state-${record.state}`} data-testid="agent-state">
      {record.pausedBy ? `paused by ${record.pausedBy}` : record.state}
    </span>
  );
}

/** Waiting for an approval above all: that is what holds it, whatever tool it asked for. */
function Doing({ state, record }: { state: RunState; record: AgentRecord }) {
  const waiting = record.pendingPermissions[0];
  if (waiting !== undefined) {
    const tool = state.view.permissions.get(waiting)?.tool;
    return (
      <span class="activity attention-text">
        waiting for approval{tool ? ` of ${tool}` : ""}
        {record.pendingPermissions.length > 1 ? ` (${record.pendingPermissions.length})` : ""}
      </span>
    );
  }
  const activity = state.activity.get(record.agentId);
  return activity ? <ActivityText activity={activity} /> : null;
}

function ActivityText({ activity }: { activity: Activity }) {
  switch (activity.kind) {
    case "tool":
      return (
        <span class="activity" title={`since ${clock(activity.since)}`}>
          running {activity.toolName}
        </span>
      );
    case "thinking":
      return <span class="activity">thinking…</span>;
    case "text":
      return <span class="activity">“{activity.text.slice(-80)}”</span>;
  }
}

/** Own spend, and the subtree's when it has agents under it. */
function Spend({ record }: { record: AgentRecord }) {
  const own = spendText(record.usage);
  const subtree = record.children.length > 0 ? spendText(record.subtreeUsage) : "";
  if (!own && !subtree) return null;
  return (
    <span class="spend muted" data-testid="spend">
      {own && <span title="its own model calls">{own}</span>}
      {subtree && <span title="its whole subtree's model calls"> · subtree {subtree}</span>}
    </span>
  );
}
