import { isLive, type PermissionView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { AgentControls, type Outcome, OutcomeView, PermissionControls } from "./controls.tsx";
import { brief, clock, usageText } from "./format.ts";
import { runHref } from "./route.ts";
import type { Activity, RunState } from "./run-state.ts";

interface TreeProps {
  state: RunState;
  selected: string | null;
  /** The last control's answer on each agent, kept by the page. */
  outcomes: ReadonlyMap<string, Outcome>;
  onOutcome: (agentId: string, outcome: Outcome) => void;
  /** The run is gone (deleted or purged): nothing is left to control. */
  gone: boolean;
}

/** The run's spawn tree: one row per agent (`data-agent-id`), children under their parent in spawn order. */
export function AgentTree({ state, selected, outcomes, onOutcome, gone }: TreeProps) {
  const pending = new Map<string, PermissionView[]>();
  for (const request of state.pendingPermissions())
    pending.set(request.agentId, [...(pending.get(request.agentId) ?? []), request]);
  return (
    <ul class="tree">
      {state.tree().map(({ record, depth }) => {
        const live = !gone && isLive(record.state);
        const outcome = outcomes.get(record.agentId);
        return (
          <li
            key={record.agentId}
            class={`agent-row${record.agentId === selected ? " selected" : ""}`}
            data-agent-id={record.agentId}
            data-state={record.state}
            style={{ marginLeft: `${depth * 1.5}rem` }}
          >
            <AgentLine state={state} record={record} selected={record.agentId === selected} live={live} />
            {!gone &&
              (pending.get(record.agentId) ?? []).map((request) => (
                <div class="approval" key={request.requestId} data-request-id={request.requestId}>
                  <span class="badge attention">approval</span> <strong>{request.tool}</strong>{" "}
                  <code>{brief(request.args, 300)}</code>
                  <PermissionControls request={request} />
                </div>
              ))}
            {live && (
              <AgentControls
                record={record}
                subtreeMembers={() => state.liveSubtree(record.agentId)}
                onOutcome={(o) => onOutcome(record.agentId, o)}
              />
            )}
            {outcome && <OutcomeView outcome={outcome} />}
          </li>
        );
      })}
    </ul>
  );
}

function AgentLine({
  state,
  record,
  selected,
  live,
}: {
  state: RunState;
  record: AgentRecord;
  selected: boolean;
  live: boolean;
}) {
  const activity = state.activity.get(record.agentId);
  return (
    <div class="agent-line">
      <a class="agent-name" href={runHref(record.runId, record.agentId)} aria-current={selected ? "true" : undefined}>
        {record.specName}
      </a>
      <span class="mono muted">{record.agentId}</span>
      <span class={`badge state-${record.state}`} data-testid="agent-state">
        {record.state}
      </span>
      {record.outcome && <span class={`badge outcome-${record.outcome}`}>{record.outcome}</span>}
      {record.pausedBy && <span class="badge">paused by {record.pausedBy}</span>}
      {record.drain && <span class="badge attention">draining</span>}
      {record.hibernated && <span class="badge">hibernated</span>}
      {live && activity && <ActivityText activity={activity} />}
      <span class="muted usage">{usageText(record.usage)}</span>
    </div>
  );
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
