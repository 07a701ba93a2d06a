import { type AgentDetail, isLive, type MachineView, type ResultView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import type { AgentOutput } from "./agent-output.ts";
import { api } from "./api.ts";
import { ForkChanges } from "./fork-changes.tsx";
import { budgetText, forkPointText, usageText, when } from "./format.ts";
import { LiveOutput } from "./live-output.tsx";
import { runHref } from "./route.ts";
import { MachineTable, SessionStats } from "./stats-tables.tsx";
import { toolErrors } from "./tree-rows.ts";
import { usePolled } from "./use-polled.ts";

interface PanelProps {
  record: AgentRecord;
  output: AgentOutput | null;
  /** A fork child's parent (what it was forked from, where its changes are adopted). */
  parent?: AgentRecord;
  /** Why a fork child's changes cannot be adopted now; null when they can. */
  adoptBlocked?: string | null;
}

/**
 * One agent in full: what the fold knows (state, usage), and what only the daemon can say: its
 * prompt and inputs, `sessionStats` and budget (`GET /agents/:id`), its result, and its state
 * machine (`GET /agents/:id/machine`), read again whenever the agent's state or last event changes;
 * and its live output from the stream. A fork child's says where it was forked from, and opens
 * its changes (`Changes`) to adopt them into its parent (`Adopt`).
 */
export function AgentPanel({ record, output, parent, adoptBlocked = null }: PanelProps) {
  const { agentId } = record;
  const live = isLive(record.state);
  // Re-read when something about the agent changed, and every 5 s while it lives (stats move without events).
  const changed = `${agentId}:${record.state}:${record.settledTurns}:${record.pendingPermissions.length}:${record.draining ? 1 : 0}:${record.hibernated ? 1 : 0}:${record.node ?? ""}`;
  const detail = usePolled(
    (signal) => api<AgentDetail>("GET", `/agents/${agentId}`, undefined, signal),
    changed,
    live ? 5_000 : null,
  );
  const result = usePolled(
    (signal) => api<ResultView>("GET", `/agents/${agentId}/result`, undefined, signal),
    changed,
    null,
  );
  const machine = usePolled(
    (signal) => api<MachineView>("GET", `/agents/${agentId}/machine`, undefined, signal),
    changed,
    live ? 2_000 : null,
  );
  const errors = toolErrors(record);

  return (
    <div class="agent-panel" data-panel-agent-id={agentId}>
      <h2>
        {record.specName} <span class="mono muted">{agentId}</span>
      </h2>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          {record.state}
          {record.outcome && record.outcome !== record.state && ` · ${record.outcome}`}
          {record.pausedBy && ` · paused by ${record.pausedBy}`}
          {record.hibernated && " · hibernated"}
          {record.draining && " · draining"}
        </dd>
        <dt>Created</dt>
        <dd>{when(record.createdAt)}</dd>
        {record.endedAt && (
          <>
            <dt>Ended</dt>
            <dd>{when(record.endedAt)}</dd>
          </>
        )}
        <dt>Node</dt>
        <dd class="mono" data-testid="agent-node">
          {record.node ?? "— (not provisioned)"}
          {record.unreachable && <span class="error"> · unreachable</span>}
        </dd>
        <dt>Parent</dt>
        <dd class="mono">{record.parentAgentId ?? "— (root)"}</dd>
        {record.forkedFrom && (
          <>
            <dt>Forked from</dt>
            <dd data-testid="forked-from">
              <a href={runHref(record.runId, record.forkedFrom.agentId)}>{parent?.specName ?? "its parent"}</a>{" "}
              <span class="mono">{record.forkedFrom.agentId}</span> {forkPointText(record.forkedFrom.forkPoint)}
            </dd>
          </>
        )}
        <dt>Inputs</dt>
        <dd class="mono">{detail.data ? detail.data.waitFor.join(", ") || "none" : "…"}</dd>
        <dt>Usage</dt>
        <dd>{usageText(record.usage) || "no model calls"}</dd>
        <dt>Subtree usage</dt>
        <dd>{usageText(record.subtreeUsage) || "no model calls"}</dd>
        {errors > 0 && (
          <>
            <dt>Tool errors</dt>
            <dd class="error">{errors} tool calls swarmd refused or failed (see its tool_refused events)</dd>
          </>
        )}
      </dl>
      <h3>Prompt</h3>
      <pre class="text">{detail.data ? (detail.data.prompt ?? "(none)") : "…"}</pre>
      <h3>Result</h3>
      {result.error && <p class="error">{result.error}</p>}
      <pre class="text" data-testid="agent-result">
        {result.data
          ? result.data.state === "settled"
            ? (result.data.result ?? `(${result.data.outcome}, no text)`)
            : "(pending)"
          : "…"}
      </pre>
      <ForkChanges record={record} parent={parent} blocked={adoptBlocked} />
      <h3>Live output</h3>
      <LiveOutput output={output} live={live} />
      <h3>Session stats and budget</h3>
      {detail.error && <p class="error">{detail.error}</p>}
      {detail.data && (
        <>
          {detail.data.sessionStats ? (
            <SessionStats stats={detail.data.sessionStats} />
          ) : (
            <p class="muted">No session stats (the harness did not answer, or the agent is paused or ended).</p>
          )}
          <p>
            <span class="muted">Budget:</span> {budgetText(detail.data.budget)}
          </p>
        </>
      )}
      <h3>Machine</h3>
      {machine.error && <p class="error">{machine.error}</p>}
      {machine.data && <MachineTable machine={machine.data} />}
    </div>
  );
}
