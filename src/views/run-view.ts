import { decodeRunEvent, type RunEvent } from "../ledger/run-events.ts";
import type { AgentView, Outcome, RunSnapshot, Usage } from "../swarm-api.ts";

export interface AgentRecord extends AgentView {
  waitFor: string[];
  prompt: string | null;
  /** The newest settled result of the agent, if any turn settled. */
  settled: { outcome: Outcome; resultRef: string | null } | null;
  children: string[];
  /** The session stats the harness had when it last hibernated (while it sleeps, the agent's stats). */
  sleptWith: Record<string, unknown> | null;
}

/** A run as the ledger tells it: the fold of its events up to `asOf`. */
export interface RunView {
  runId: string;
  rootAgentId: string;
  asOf: number;
  agents: Map<string, AgentRecord>;
  /** Every model call of the run. */
  usage: Usage;
}

export function createRunView(runId: string): RunView {
  return { runId, rootAgentId: "", asOf: 0, agents: new Map(), usage: emptyUsage() };
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, calls: 0 });

/** Tokens of every kind: what `maxTokens` counts. */
export const totalTokens = (u: Usage): number => u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;

function addUsage(to: Usage, call: Omit<Usage, "calls">): void {
  to.inputTokens += call.inputTokens;
  to.outputTokens += call.outputTokens;
  to.cacheReadTokens += call.cacheReadTokens;
  to.cacheWriteTokens += call.cacheWriteTokens;
  to.costUsd += call.costUsd;
  to.calls += 1;
}

/** A persisted event as stored (ledger) or streamed (SSE), before it is decoded. */
export interface StoredEvent {
  seq: number;
  at: number;
  type: string;
  agentId: string | null;
  data: unknown;
}

/**
 * Fold one persisted event (in seq order) into the view. Pure over the view: the same events always
 * give the same view, which is what makes `GET /runs/:id` + the events after its `asOf` equal the
 * live state. An event that does not decode only moves `asOf`.
 */
export function foldEvent(view: RunView, stored: StoredEvent): void {
  view.asOf = stored.seq;
  // Harness events (most of a run's events) change nothing here: not decoded on this hot path.
  if (!FOLDED_TYPES.has(stored.type)) return;
  const event = decodeRunEvent(stored);
  if (event) applyEvent(view, event);
}

/** The event types `applyEvent` acts on. */
const FOLDED_TYPES: ReadonlySet<string> = new Set(["agent_spawned", "agent_provisioned", "agent_state_changed", "handle_settled", "agent_ended", "model_usage", "agent_hibernated", "agent_woke"] satisfies RunEvent["type"][]);

function applyEvent(view: RunView, event: RunEvent): void {
  const agent = event.agentId ? view.agents.get(event.agentId) : undefined;
  switch (event.type) {
    case "agent_spawned": {
      const { parentAgentId, waitFor } = event.data;
      view.agents.set(event.agentId, {
        agentId: event.agentId,
        runId: view.runId,
        parentAgentId,
        depth: event.data.depth,
        spawnIndex: event.data.spawnIndex,
        state: waitFor.length > 0 ? "spawning" : "provisioning",
        specName: event.data.specName,
        sandboxId: null,
        createdAt: event.at,
        endedAt: null,
        outcome: null,
        waitFor,
        prompt: event.data.prompt,
        settled: null,
        children: [],
        sleptWith: null,
        usage: emptyUsage(),
        subtreeUsage: emptyUsage(),
      });
      if (parentAgentId === null) view.rootAgentId = event.agentId;
      else view.agents.get(parentAgentId)?.children.push(event.agentId);
      return;
    }
    case "agent_provisioned":
      if (agent) agent.sandboxId = event.data.sandboxId;
      return;
    case "agent_state_changed":
      if (!agent) return;
      agent.state = event.data.to;
      if (agent.state === "paused") agent.pausedBy = event.data.reason === "cascade" || event.data.reason === "budget" ? event.data.reason : "operator";
      else delete agent.pausedBy;
      return;
    case "handle_settled":
      if (agent) agent.settled = { outcome: event.data.outcome, resultRef: event.data.resultRef };
      return;
    case "model_usage": {
      if (!agent) return;
      addUsage(agent.usage, event.data);
      addUsage(view.usage, event.data);
      // Every ancestor's subtree counts it: what the lineage's spend caps are checked against.
      for (let at: AgentRecord | undefined = agent; at; at = at.parentAgentId ? view.agents.get(at.parentAgentId) : undefined) addUsage(at.subtreeUsage, event.data);
      return;
    }
    case "agent_hibernated":
      if (!agent) return;
      agent.hibernated = true;
      agent.sleptWith = event.data.sessionStats;
      return;
    case "agent_woke":
      if (agent) delete agent.hibernated;
      return;
    case "agent_ended":
      if (!agent) return;
      delete agent.hibernated;
      agent.outcome = event.data.outcome;
      agent.state = agent.outcome === "aborted" ? "aborted" : "done";
      agent.endedAt = event.data.endedAt;
      delete agent.pausedBy;
      return;
  }
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
    usage: { ...record.usage },
    subtreeUsage: { ...record.subtreeUsage },
  };
  if (record.pausedBy) view.pausedBy = record.pausedBy;
  if (record.hibernated) view.hibernated = true;
  return view;
}

/** The run's snapshot; `queuePositions` adds each waiting agent's place in the start queue. */
export function runSnapshot(view: RunView, queuePositions?: ReadonlyMap<string, number>): RunSnapshot {
  const agents = [...view.agents.values()].map((record) => {
    const agent = agentView(record);
    const place = queuePositions?.get(record.agentId);
    if (place !== undefined) agent.queuePosition = place;
    return agent;
  });
  return { runId: view.runId, rootAgentId: view.rootAgentId, asOf: view.asOf, agents, usage: { ...view.usage } };
}
