import type { PermissionView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { AgentControls, PermissionControls } from "./controls.tsx";
import { brief, usageText } from "./format.ts";
import { runHref } from "./route.ts";
import type { Activity, RunState } from "./run-state.ts";

/** The run's spawn tree: one row per agent (`data-agent-id`), children under their parent in spawn order. */
export function AgentTree({ state, selected }: { state: RunState; selected: string | null }) {
  const pending = new Map<string, PermissionView[]>();
  for (const request of state.pendingPermissions()) pending.set(request.agentId, [...(pending.get(request.agentId) ?? []), request]);
  return (
    <ul class="tree">
      {state.tree().map(({ record, depth }) => (
        <AgentRow key={record.agentId} state={state} record={record} depth={depth} selected={record.agentId === selected} requests={pending.get(record.agentId) ?? []} />
      ))}
    </ul>
  );
}

function AgentRow({ state, record, depth, selected, requests }: { state: RunState; record: AgentRecord; depth: number; selected: boolean; requests: PermissionView[] }) {
  const live = record.state !== "done" && record.state !== "aborted";
  const activity = state.activity.get(record.agentId);
  return (
    <li class={`agent-row${selected ? " selected" : ""}`} data-agent-id={record.agentId} data-state={record.state} style={{ marginLeft: `${depth * 1.5}rem` }}>
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
      {requests.map((request) => (
        <div class="approval" key={request.requestId} data-request-id={request.requestId}>
          <span class="badge attention">approval</span> <strong>{request.tool}</strong> <code>{brief(request.args, 300)}</code>
          <PermissionControls request={request} />
        </div>
      ))}
      {live && <AgentControls record={record} />}
    </li>
  );
}

function ActivityText({ activity }: { activity: Activity }) {
  switch (activity.kind) {
    case "tool":
      return <span class="activity">running {activity.toolName}</span>;
    case "thinking":
      return <span class="activity">thinking…</span>;
    case "text":
      return <span class="activity">“{activity.text.slice(-80)}”</span>;
  }
}
