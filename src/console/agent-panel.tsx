import { Fragment } from "preact";
import { type AgentDetail, isLive, type MachineView, type ResultView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { api } from "./api.ts";
import { brief, budgetText, clock, usageText, when } from "./format.ts";
import { usePolled } from "./use-polled.ts";

/**
 * One agent in full: what the fold knows (prompt, inputs, state), and what only the daemon can say:
 * its result, `sessionStats` and budget (`GET /agents/:id`), and its state machine
 * (`GET /agents/:id/machine`), read again whenever the agent's state or last event changes.
 */
export function AgentPanel({ record }: { record: AgentRecord }) {
  const { agentId } = record;
  const live = isLive(record.state);
  // Re-read when something about the agent changed, and every 5 s while it lives (stats move without events).
  const changed = `${agentId}:${record.state}:${record.settled?.resultRef ?? ""}:${record.pendingPermissions.length}:${record.drain ? 1 : 0}`;
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

  return (
    <div class="agent-panel" data-panel-agent-id={agentId}>
      <h2>
        {record.specName} <span class="mono muted">{agentId}</span>
      </h2>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          {record.state}
          {record.outcome && ` · ${record.outcome}`}
          {record.pausedBy && ` · paused by ${record.pausedBy}`}
        </dd>
        <dt>Created</dt>
        <dd>{when(record.createdAt)}</dd>
        {record.endedAt && (
          <>
            <dt>Ended</dt>
            <dd>{when(record.endedAt)}</dd>
          </>
        )}
        <dt>Parent</dt>
        <dd class="mono">{record.parentAgentId ?? "— (root)"}</dd>
        <dt>Inputs</dt>
        <dd class="mono">{record.waitFor.length ? record.waitFor.join(", ") : "none"}</dd>
        <dt>Usage</dt>
        <dd>{usageText(record.usage) || "no model calls"}</dd>
        <dt>Subtree usage</dt>
        <dd>{usageText(record.subtreeUsage) || "no model calls"}</dd>
      </dl>
      <h3>Prompt</h3>
      <pre class="text">{record.prompt ?? "(none)"}</pre>
      <h3>Result</h3>
      {result.error && <p class="error">{result.error}</p>}
      <pre class="text" data-testid="agent-result">
        {result.data
          ? result.data.state === "settled"
            ? (result.data.result ?? `(${result.data.outcome}, no text)`)
            : "(pending)"
          : "…"}
      </pre>
      <h3>Session stats and budget</h3>
      {detail.error && <p class="error">{detail.error}</p>}
      {detail.data && (
        <dl class="facts">
          {Object.entries(detail.data.sessionStats ?? {}).map(([key, value]) => (
            <Fragment key={key}>
              <dt>{key}</dt>
              <dd>{brief(value, 120)}</dd>
            </Fragment>
          ))}
          {detail.data.sessionStats === undefined && (
            <dd class="muted">No session stats (the harness did not answer, or the agent is paused or ended).</dd>
          )}
          <dt>Budget</dt>
          <dd>{budgetText(detail.data.budget)}</dd>
        </dl>
      )}
      <h3>Machine</h3>
      {machine.error && <p class="error">{machine.error}</p>}
      {machine.data && <MachineTable machine={machine.data} />}
    </div>
  );
}

/** The agent's machine as the daemon runs it: an offline stand-in for the Stately inspector. */
function MachineTable({ machine }: { machine: MachineView }) {
  return (
    <div class="machine">
      <p>
        <code data-testid="machine-value">{JSON.stringify(machine.value)}</code>{" "}
        {machine.tags.map((tag) => (
          <span key={tag} class="badge">
            {tag}
          </span>
        ))}
        {!machine.running && <span class="muted"> (no machine runs for it now)</span>}
      </p>
      <table>
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
              <td class="mono">{JSON.stringify(t.value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
