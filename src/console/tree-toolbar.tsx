import { AGENT_STATES, OUTCOMES } from "../swarm-api.ts";
import type { TreeFilter } from "./tree-rows.ts";

interface ToolbarProps {
  filter: TreeFilter;
  onFilter: (filter: TreeFilter) => void;
  onCollapseAll: () => void;
  onExpandAll: () => void;
  /** Agents the filter matches (all of them without one) and agents in all. */
  shown: number;
  total: number;
  filtering: boolean;
}

/** Search by name or id, filter by state and outcome, fold or unfold every subtree. */
export function TreeToolbar({ filter, onFilter, onCollapseAll, onExpandAll, shown, total, filtering }: ToolbarProps) {
  return (
    <div class="tree-toolbar">
      <input
        type="search"
        aria-label="Search agents"
        placeholder="Search by name or id"
        value={filter.text}
        onInput={(e) => onFilter({ ...filter, text: e.currentTarget.value })}
      />
      <select
        aria-label="Filter by state"
        value={filter.state}
        onChange={(e) => onFilter({ ...filter, state: e.currentTarget.value })}
      >
        <option value="">any state</option>
        <option value="live">live</option>
        {AGENT_STATES.map((state) => (
          <option key={state} value={state}>
            {state}
          </option>
        ))}
        <option value="approval">waiting for approval</option>
        <option value="errors">with tool errors</option>
      </select>
      <select
        aria-label="Filter by outcome"
        value={filter.outcome}
        onChange={(e) => onFilter({ ...filter, outcome: e.currentTarget.value })}
      >
        <option value="">any outcome</option>
        {OUTCOMES.map((outcome) => (
          <option key={outcome} value={outcome}>
            {outcome}
          </option>
        ))}
      </select>
      <button type="button" onClick={onCollapseAll}>
        Collapse all
      </button>
      <button type="button" onClick={onExpandAll}>
        Expand all
      </button>
      <span class="muted" data-testid="tree-count">
        {filtering ? `${shown} of ${total} agents match` : `${total} agents`}
      </span>
    </div>
  );
}
