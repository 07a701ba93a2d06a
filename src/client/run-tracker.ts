import { isLive, type PermissionView, type RunSnapshot } from "../swarm-api.ts";
import { type AgentRecord, emptyUsage, foldEvent, type RunView, recordOfView } from "../views/run-view.ts";
import type { SwarmEvent } from "./event-stream.ts";

/**
 * The run's tree kept current from its event stream: `GET /runs/:runId` and then every persisted
 * event after its `asOf` (spec 6.3), folded by the service's own fold so both always agree.
 */
export interface RunTracker {
  readonly view: RunView;
  /** Folds a persisted event above `asOf`; returns whether it was one (ephemeral and older ones are skipped). */
  apply(event: SwarmEvent): boolean;
  /**
   * Every agent has ended. Final: a spawn needs a live parent, so an ended run gets no new agents.
   * A run with no agents yet is not over.
   */
  isOver(): boolean;
  /** Agents in tree order: each parent before its children, children by spawn index. */
  ordered(): AgentRecord[];
}

export function trackRun(snapshot: RunSnapshot): RunTracker {
  const view: RunView = {
    runId: snapshot.runId,
    rootAgentId: snapshot.rootAgentId,
    asOf: snapshot.asOf,
    agents: new Map(),
    usage: { ...(snapshot.usage ?? emptyUsage()) },
    permissions: new Map(),
  };
  for (const agent of snapshot.agents) {
    // A daemon older than the model gateway sends no usage; one older than approvals, no pending ids;
    // one older than `tool_refused`, no tool error count.
    const pendingPermissions = [...(agent.pendingPermissions ?? [])];
    view.agents.set(
      agent.agentId,
      recordOfView({
        ...agent,
        pendingPermissions,
        usage: { ...(agent.usage ?? emptyUsage()) },
        subtreeUsage: { ...(agent.subtreeUsage ?? emptyUsage()) },
        toolErrors: agent.toolErrors ?? 0,
      }),
    );
    // The snapshot names pending requests by id only. The fold resolves only requests it knows, so
    // each is known here, with what the snapshot does not tell (tool, args, times) left blank.
    for (const requestId of pendingPermissions)
      view.permissions.set(requestId, pendingStub(snapshot.runId, agent.agentId, requestId));
  }
  for (const agent of [...view.agents.values()].sort(
    (a, b) => a.spawnIndex - b.spawnIndex || a.createdAt - b.createdAt,
  )) {
    if (agent.parentAgentId) view.agents.get(agent.parentAgentId)?.children.push(agent.agentId);
  }

  return {
    view,
    apply(event) {
      if (event.seq === null || event.seq <= view.asOf) return false;
      foldEvent(view, {
        seq: event.seq,
        type: event.type,
        agentId: event.agentId,
        at: event.at ?? Date.now(),
        data: event.data,
      });
      return true;
    },
    isOver: () => view.agents.size > 0 && [...view.agents.values()].every((a) => !isLive(a.state)),
    ordered() {
      const out: AgentRecord[] = [];
      const visit = (id: string) => {
        const agent = view.agents.get(id);
        if (!agent || out.includes(agent)) return;
        out.push(agent);
        for (const child of agent.children) visit(child);
      };
      visit(view.rootAgentId);
      // Anything not reached from the root (should not happen) is still shown, never dropped.
      for (const agent of view.agents.values()) if (!out.includes(agent)) visit(agent.agentId);
      return out;
    },
  };
}

/** A pending request known from a snapshot only: enough for its `permission_resolved` to fold. */
function pendingStub(runId: string, agentId: string, requestId: string): PermissionView {
  return {
    requestId,
    runId,
    agentId,
    tool: "",
    args: {},
    at: 0,
    expiresAt: null,
    state: "pending",
    decision: null,
    message: null,
    by: null,
    resolvedAt: null,
  };
}
