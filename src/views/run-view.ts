import type { AgentState, AgentView, Outcome, RunSnapshot } from "../swarm-api.ts";

/** A persisted ledger event (the fields the fold reads). */
export interface FoldEvent {
  seq: number;
  type: string;
  agentId: string | null;
  at: number;
  data: Record<string, unknown>;
}

export interface AgentRecord extends AgentView {
  waitFor: string[];
  prompt: string | null;
  /** The newest settled result of the agent, if any turn settled. */
  settled: { outcome: Outcome; resultRef: string | null } | null;
  children: string[];
}

/** A run as the ledger tells it: the fold of its events up to `asOf`. */
export interface RunView {
  runId: string;
  rootAgentId: string;
  asOf: number;
  agents: Map<string, AgentRecord>;
}

export function createRunView(runId: string): RunView {
  return { runId, rootAgentId: "", asOf: 0, agents: new Map() };
}

/**
 * Apply one persisted event (in seq order). Pure over the view: the same events always give the
 * same view, which is what makes `GET /runs/:id` + the events after its `asOf` equal the live state.
 */
export function applyEvent(view: RunView, event: FoldEvent): void {
  view.asOf = event.seq;
  const agent = event.agentId ? view.agents.get(event.agentId) : undefined;
  const d = event.data;
  switch (event.type) {
    case "agent_spawned": {
      if (!event.agentId) return;
      const waitFor = Array.isArray(d.waitFor) ? (d.waitFor as string[]) : [];
      const parentAgentId = typeof d.parentAgentId === "string" ? d.parentAgentId : null;
      view.agents.set(event.agentId, {
        agentId: event.agentId,
        runId: view.runId,
        parentAgentId,
        depth: Number(d.depth ?? 0),
        spawnIndex: Number(d.spawnIndex ?? 0),
        state: waitFor.length > 0 ? "spawning" : "provisioning",
        specName: String(d.specName ?? ""),
        sandboxId: null,
        createdAt: event.at,
        endedAt: null,
        outcome: null,
        waitFor,
        prompt: typeof d.prompt === "string" ? d.prompt : null,
        settled: null,
        children: [],
      });
      if (parentAgentId === null) view.rootAgentId = event.agentId;
      else view.agents.get(parentAgentId)?.children.push(event.agentId);
      return;
    }
    case "agent_provisioned":
      if (agent) agent.sandboxId = String(d.sandboxId);
      return;
    case "agent_state_changed":
      if (!agent) return;
      agent.state = d.to as AgentState;
      if (agent.state === "paused") agent.pausedBy = d.reason === "cascade" ? "cascade" : "operator";
      else delete agent.pausedBy;
      return;
    case "handle_settled":
      if (agent) agent.settled = { outcome: d.outcome as Outcome, resultRef: (d.resultRef as string | null) ?? null };
      return;
    case "agent_ended":
      if (!agent) return;
      agent.outcome = d.outcome as Outcome;
      agent.state = agent.outcome === "aborted" ? "aborted" : "done";
      agent.endedAt = Number(d.endedAt ?? event.at);
      delete agent.pausedBy;
      return;
  }
}

/** agentId → parentAgentId of every agent of the run (what the tree orders and budgets walk). */
export function parentMap(view: RunView): Record<string, string | null> {
  return Object.fromEntries([...view.agents.values()].map((a) => [a.agentId, a.parentAgentId]));
}

export function isLive(state: AgentState): boolean {
  return state !== "done" && state !== "aborted";
}

/** The agent view of spec section 2.2 (no internal fields). */
export function agentView(record: AgentRecord): AgentView {
  const view: AgentView = {
    agentId: record.agentId,
    runId: record.runId,
    parentAgentId: record.parentAgentId,
    depth: record.depth,
    spawnIndex: record.spawnIndex,
    state: record.state,
    specName: record.specName,
    sandboxId: record.sandboxId,
    createdAt: record.createdAt,
    endedAt: record.endedAt,
    outcome: record.outcome,
  };
  if (record.pausedBy) view.pausedBy = record.pausedBy;
  return view;
}

export function runSnapshot(view: RunView): RunSnapshot {
  return { runId: view.runId, rootAgentId: view.rootAgentId, asOf: view.asOf, agents: [...view.agents.values()].map(agentView) };
}
