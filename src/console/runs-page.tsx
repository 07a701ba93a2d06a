import { AGENT_STATES, type RunSummary } from "../swarm-api.ts";
import { api } from "./api.ts";
import { usageText, when } from "./format.ts";
import { runHref } from "./route.ts";
import { usePolled } from "./use-polled.ts";

/** Every run, newest first, with its agents counted by state (`GET /runs`, read every 2 s). */
export function RunsPage() {
  const { data, error } = usePolled(
    (signal) => api<{ runs: RunSummary[] }>("GET", "/runs", undefined, signal),
    "runs",
    2_000,
  );
  return (
    <main class="runs-page">
      <h1>Runs</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {data && data.runs.length === 0 && <p class="muted">No runs yet. Start one with `swarm run` or POST /runs.</p>}
      {data && data.runs.length > 0 && (
        <table class="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th>Root spec</th>
              <th>Created</th>
              <th>Agents</th>
              <th>By state</th>
              <th>Usage</th>
            </tr>
          </thead>
          <tbody>
            {data.runs.map((run) => (
              <tr key={run.runId} data-run-id={run.runId}>
                <td>
                  <a href={runHref(run.runId)} class="mono">
                    {run.runId}
                  </a>
                </td>
                <td>{run.specName}</td>
                <td>{when(run.createdAt)}</td>
                <td>
                  {run.live} live / {run.agents}
                </td>
                <td>
                  <div class="counts">
                    {AGENT_STATES.filter((state) => run.states[state] > 0).map((state) => (
                      <span key={state} class={`badge state-${state}`}>
                        {state} {run.states[state]}
                      </span>
                    ))}
                  </div>
                </td>
                <td class="muted">{usageText(run.usage)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
