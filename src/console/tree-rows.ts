/**
 * Which rows the spawn tree shows: every agent in tree order, less the subtrees of collapsed rows;
 * or, while a filter is set, the agents it matches with their ancestors as context (collapsing
 * is set aside then, so no match hides). DOM-free.
 */
import { type AgentState, isLive } from "../swarm-api.ts";
import type { AgentRecord, RunView } from "../views/run-view.ts";

/** "" for any. `state` also takes `live`, `approval` (waiting for a decision) and `errors` (tool errors). */
export interface TreeFilter {
  text: string;
  state: string;
  outcome: string;
}

export const NO_FILTER: TreeFilter = { text: "", state: "", outcome: "" };

export interface TreeRow {
  record: AgentRecord;
  depth: number;
  hasChildren: boolean;
  collapsed: boolean;
  /** Shown only as the ancestor of a match. */
  context: boolean;
}

export const filtering = (filter: TreeFilter): boolean =>
  filter.text.trim() !== "" || filter.state !== "" || filter.outcome !== "";

/** `toolErrors` of the agent view, 0 when the daemon does not send it. */
export function toolErrors(record: AgentRecord): number {
  const count = (record as { toolErrors?: unknown }).toolErrors;
  return typeof count === "number" && count > 0 ? count : 0;
}

export function matches(record: AgentRecord, filter: TreeFilter): boolean {
  const text = filter.text.trim().toLowerCase();
  if (text && !record.specName.toLowerCase().includes(text) && !record.agentId.includes(text)) return false;
  switch (filter.state) {
    case "":
      break;
    case "live":
      if (!isLive(record.state)) return false;
      break;
    case "approval":
      if (record.pendingPermissions.length === 0) return false;
      break;
    case "errors":
      if (toolErrors(record) === 0) return false;
      break;
    default:
      if (record.state !== filter.state) return false;
  }
  return filter.outcome === "" || record.outcome === filter.outcome;
}

export function treeRows(view: RunView, collapsed: ReadonlySet<string>, filter: TreeFilter): TreeRow[] {
  const rows: TreeRow[] = [];
  const root = view.agents.get(view.rootAgentId);
  if (root === undefined) return rows;
  if (!filtering(filter)) {
    const visit = (record: AgentRecord, depth: number) => {
      const folded = collapsed.has(record.agentId);
      rows.push({ record, depth, hasChildren: record.children.length > 0, collapsed: folded, context: false });
      if (!folded) for (const child of record.children) visitId(child, depth + 1);
    };
    const visitId = (agentId: string, depth: number) => {
      const record = view.agents.get(agentId);
      if (record) visit(record, depth);
    };
    visit(root, 0);
    return rows;
  }
  // Post-order: a row is shown when it or anything under it matches.
  const shown = (record: AgentRecord, depth: number): boolean => {
    const at = rows.length;
    rows.push({ record, depth, hasChildren: record.children.length > 0, collapsed: false, context: false });
    let below = false;
    for (const child of record.children) {
      const next = view.agents.get(child);
      if (next && shown(next, depth + 1)) below = true;
    }
    const self = matches(record, filter);
    if (!self && !below) {
      rows.length = at;
      return false;
    }
    (rows[at] as TreeRow).context = !self;
    return true;
  };
  shown(root, 0);
  return rows;
}

/** What a collapsed row stands for: the agents under it, by state. */
export function subtreeStates(view: RunView, agentId: string): { below: number; states: Map<AgentState, number> } {
  const states = new Map<AgentState, number>();
  let below = 0;
  const stack = [...(view.agents.get(agentId)?.children ?? [])];
  for (let id = stack.pop(); id !== undefined; id = stack.pop()) {
    const record = view.agents.get(id);
    if (record === undefined) continue;
    below++;
    states.set(record.state, (states.get(record.state) ?? 0) + 1);
    stack.push(...record.children);
  }
  return { below, states };
}

/** Every agent with children: what "Collapse all" folds. */
export function parents(view: RunView): string[] {
  const ids: string[] = [];
  for (const record of view.agents.values()) if (record.children.length > 0) ids.push(record.agentId);
  return ids;
}
