import { widenDrain } from "../../machines/drain.ts";
import { decodeRunEvent, type RunEvent } from "../ledger/run-events.ts";
import {
  AGENT_STATES,
  type AgentState,
  type AgentView,
  type Outcome,
  type PermissionView,
  type RunSnapshot,
  type RunSummary,
  type Usage,
} from "../swarm-api.ts";

export interface AgentRecord extends AgentView {
  waitFor: string[];
  prompt: string | null;
  /** The newest settled result of the agent, if any turn settled. */
  settled: { outcome: Outcome; resultRef: string | null } | null;
  /** Turns settled over its life (`handle_settled` events). */
  settledTurns: number;
  /** The ledger seq of its first turn that settled with success: who won a race (`POST /runs/:runId/wait`). */
  succeededAt?: number;
  children: string[];
  /** The session stats the harness had when it last hibernated (while it sleeps, the agent's stats). */
  sleptWith: Record<string, unknown> | null;
  /** The drain under way on the agent (its view shows `draining: true`). */
  drain?: { subtree: boolean; deadline: number };
}

/**
 * The record of an agent known from a snapshot's view rather than from its `agent_spawned` event:
 * what the snapshot does not carry (its prompt, inputs, settled turns, children) starts empty.
 */
export function recordOfView(agent: AgentView): AgentRecord {
  return {
    ...agent,
    pendingPermissions: [...agent.pendingPermissions],
    waitFor: [],
    prompt: null,
    settled: null,
    settledTurns: 0,
    children: [],
    sleptWith: null,
  };
}

/** A run as the ledger tells it: the fold of its events up to `asOf`. */
export interface RunView {
  runId: string;
  rootAgentId: string;
  asOf: number;
  agents: Map<string, AgentRecord>;
  /** Every model call of the run. */
  usage: Usage;
  /** Every approval request of the run, in the order they were asked (the inbox). */
  permissions: Map<string, PermissionView>;
}

export function createRunView(runId: string): RunView {
  return { runId, rootAgentId: "", asOf: 0, agents: new Map(), usage: emptyUsage(), permissions: new Map() };
}

export const emptyUsage = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
  calls: 0,
});

/** Tokens of every kind: what `maxTokens` counts. */
export const totalTokens = (u: Usage): number =>
  u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;

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
const FOLDED_TYPES: ReadonlySet<string> = new Set([
  "agent_spawned",
  "agent_provisioned",
  "agent_unreachable",
  "agent_reachable",
  "agent_state_changed",
  "handle_settled",
  "agent_ended",
  "model_usage",
  "agent_hibernated",
  "agent_woke",
  "agent_draining",
  "permission_request",
  "permission_resolved",
  "tool_refused",
] satisfies RunEvent["type"][]);

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
        settledTurns: 0,
        children: [],
        sleptWith: null,
        pendingPermissions: [],
        usage: emptyUsage(),
        subtreeUsage: emptyUsage(),
        toolErrors: 0,
        ...(event.data.forkedFrom ? { forkedFrom: event.data.forkedFrom } : {}),
      });
      if (parentAgentId === null) view.rootAgentId = event.agentId;
      else view.agents.get(parentAgentId)?.children.push(event.agentId);
      return;
    }
    case "agent_provisioned":
      if (!agent) return;
      agent.sandboxId = event.data.sandboxId;
      // A ledger older than `node` says nothing of where: none is shown rather than a guess.
      if (event.data.node === undefined) delete agent.node;
      else agent.node = event.data.node;
      return;
    case "agent_unreachable":
      if (agent && agent.outcome === null) agent.unreachable = true;
      return;
    case "agent_reachable":
      if (agent) delete agent.unreachable;
      return;
    case "agent_state_changed":
      if (!agent) return;
      agent.state = event.data.to;
      if (agent.state === "paused")
        agent.pausedBy =
          event.data.reason === "cascade" || event.data.reason === "budget" ? event.data.reason : "operator";
      else delete agent.pausedBy;
      return;
    case "handle_settled":
      if (!agent) return;
      agent.settled = { outcome: event.data.outcome, resultRef: event.data.resultRef };
      agent.settledTurns++;
      if (event.data.outcome === "success") agent.succeededAt ??= event.seq;
      return;
    case "model_usage": {
      if (!agent) return;
      addUsage(agent.usage, event.data);
      addUsage(view.usage, event.data);
      // Every ancestor's subtree counts it: what the lineage's spend caps are checked against.
      for (
        let at: AgentRecord | undefined = agent;
        at;
        at = at.parentAgentId ? view.agents.get(at.parentAgentId) : undefined
      )
        addUsage(at.subtreeUsage, event.data);
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
    case "agent_draining":
      if (!agent || agent.outcome !== null) return;
      agent.draining = true;
      // As the machine keeps it (one rule for both).
      agent.drain = widenDrain(agent.drain, event.data);
      return;
    case "permission_request": {
      if (!agent || view.permissions.has(event.data.requestId)) return;
      const { requestId, tool, args, expiresAt } = event.data;
      view.permissions.set(requestId, {
        requestId,
        runId: view.runId,
        agentId: agent.agentId,
        tool,
        args,
        at: event.at,
        expiresAt,
        state: "pending",
        decision: null,
        message: null,
        by: null,
        resolvedAt: null,
      });
      agent.pendingPermissions.push(requestId);
      return;
    }
    case "permission_resolved": {
      // The agent's list loses the id even when the request itself is not in the view (a view
      // that began at a snapshot, as the CLI's, knows pending requests by id only).
      if (agent) agent.pendingPermissions = agent.pendingPermissions.filter((id) => id !== event.data.requestId);
      const request = view.permissions.get(event.data.requestId);
      if (!request || request.state === "resolved" || request.agentId !== event.agentId) return;
      Object.assign(request, {
        state: "resolved",
        decision: event.data.decision,
        message: event.data.message,
        by: event.data.by,
        resolvedAt: event.at,
      });
      return;
    }
    case "tool_refused":
      if (agent) agent.toolErrors += event.data.count;
      return;
    case "agent_ended":
      if (!agent) return;
      delete agent.hibernated;
      delete agent.draining;
      delete agent.drain;
      delete agent.unreachable;
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
    pendingPermissions: [...record.pendingPermissions],
    usage: { ...record.usage },
    subtreeUsage: { ...record.subtreeUsage },
    toolErrors: record.toolErrors,
  };
  if (record.pausedBy) view.pausedBy = record.pausedBy;
  if (record.hibernated) view.hibernated = true;
  if (record.draining) view.draining = true;
  if (record.node !== undefined) view.node = record.node;
  if (record.unreachable) view.unreachable = true;
  if (record.forkedFrom)
    view.forkedFrom = { agentId: record.forkedFrom.agentId, forkPoint: { ...record.forkedFrom.forkPoint } };
  return view;
}

/** How many of the view's agents are in each state, added to `counts` (every state named, 0 included). */
export function countStates(
  view: RunView,
  counts = Object.fromEntries(AGENT_STATES.map((state) => [state, 0])) as Record<AgentState, number>,
): Record<AgentState, number> {
  for (const agent of view.agents.values()) counts[agent.state]++;
  return counts;
}

/** `GET /runs`: the run at a glance. */
export function runSummary(view: RunView): RunSummary {
  const states = countStates(view);
  const root = view.agents.get(view.rootAgentId);
  const live = states.spawning + states.provisioning + states.running + states.paused;
  return {
    runId: view.runId,
    rootAgentId: view.rootAgentId,
    specName: root?.specName ?? "",
    createdAt: root?.createdAt ?? 0,
    states,
    agents: view.agents.size,
    live,
    usage: { ...view.usage },
  };
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
