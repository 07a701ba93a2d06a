import { AGENT_STATES, type AgentState, type RunSummary } from "../swarm-api.ts";
import { usageSummary } from "./spend-format.ts";
import { age, columns, oneLine } from "./table-format.ts";

/** The order a run's agents are counted in: the way through an agent's life. */
const STATES: readonly AgentState[] = AGENT_STATES;

/**
 * `swarm runs`: one line per run in the order given (the service's: newest first): run id, root
 * spec name, age, live and total agents, how many agents are in each state (those with any), and
 * what its model calls cost (`-` before the first). `now` is passed in so the ages are testable.
 */
export function runTable(runs: readonly RunSummary[], now: number): string[] {
  const rows = runs.map((run) => [
    run.runId,
    oneLine(run.specName) || "-",
    age(now - run.createdAt),
    `${run.live}/${run.agents}`,
    stateCounts(run.states),
    usageSummary(run.usage) ?? "-",
  ]);
  return columns([["RUN", "SPEC", "AGE", "LIVE/ALL", "STATES", "SPEND"], ...rows]);
}

/** `2 running, 1 done`: the states some agent is in, in life order; `-` for a run without agents. */
export function stateCounts(states: Readonly<Record<AgentState, number>>): string {
  return (
    STATES.filter((state) => states[state] > 0)
      .map((state) => `${states[state]} ${state}`)
      .join(", ") || "-"
  );
}
