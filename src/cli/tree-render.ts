import type { SwarmEvent } from "../client/event-stream.ts";
import type { RunTracker } from "../client/run-tracker.ts";
import { isLive } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { usageSummary } from "./spend-format.ts";

const MARK: Record<string, string> = {
  spawning: "…",
  provisioning: "◌",
  running: "●",
  paused: "‖",
  done: "✓",
  aborted: "■",
};

/**
 * What each running agent is doing now, from harness events (ephemeral ones included): shown
 * beside its state so a live tree says more than "running".
 */
export function trackActivity(activity: Map<string, string>, event: SwarmEvent): boolean {
  if (!event.agentId) return false;
  const before = activity.get(event.agentId);
  switch (event.type) {
    case "agent_start":
    case "turn_start":
      activity.set(event.agentId, "working");
      break;
    case "tool_start":
      activity.set(event.agentId, `tool ${String(event.data.toolName ?? "?")}`);
      break;
    case "tool_end":
      activity.set(event.agentId, "working");
      break;
    case "agent_end":
    case "agent_ended":
    case "agent_state_changed":
      activity.delete(event.agentId);
      break;
    default:
      return false;
  }
  return activity.get(event.agentId) !== before;
}

/**
 * The spawn tree as lines: a header (with the run's model spend once it has any), then one line
 * per agent in tree order with box-drawing branches, its spec name and id, state, outcome (once
 * ended), whether it drains, how many of its tool calls swarmd refused, how many approval requests
 * wait on the operator, what its subtree has spent (what its spend caps count) and current activity.
 */
export function renderTree(tracker: RunTracker, activity: ReadonlyMap<string, string> = new Map()): string[] {
  const agents = tracker.ordered();
  const live = agents.filter((a) => isLive(a.state)).length;
  const status = tracker.isOver() ? "ended" : `${live} live`;
  const spent = usageSummary(tracker.view.usage);
  const lines = [
    `run ${tracker.view.runId} · ${agents.length} agent${agents.length === 1 ? "" : "s"} · ${status}${spent ? ` · ${spent}` : ""} · seq ${tracker.view.asOf}`,
  ];
  const visit = (agent: AgentRecord, prefix: string, childPrefix: string) => {
    lines.push(`${prefix}${describe(agent, activity.get(agent.agentId))}`);
    agent.children.forEach((id, i) => {
      const child = tracker.view.agents.get(id);
      if (!child) return;
      const last = i === agent.children.length - 1;
      visit(child, `${childPrefix}${last ? "└─ " : "├─ "}`, `${childPrefix}${last ? "   " : "│  "}`);
    });
  };
  const root = tracker.view.agents.get(tracker.view.rootAgentId);
  if (root) visit(root, "", "");
  return lines;
}

function describe(agent: AgentRecord, activity: string | undefined): string {
  const parts = [`${MARK[agent.state] ?? "?"} ${agent.specName} ${agent.agentId}`, agent.state];
  if (agent.outcome) parts.push(agent.outcome);
  if (agent.state === "paused" && agent.pausedBy) parts.push(`(by ${agent.pausedBy})`);
  if (agent.draining) parts.push("(draining)");
  // Calls swarmd refused: work the agent asked for and did not get, so a lossy tree never looks clean.
  if (agent.toolErrors > 0) parts.push(`· ${agent.toolErrors} tool error${agent.toolErrors === 1 ? "" : "s"}`);
  // What waits on the operator comes before spend and activity: it is what they must act on.
  const waiting = agent.pendingPermissions.length;
  if (waiting > 0) parts.push(`· ${waiting} approval${waiting === 1 ? "" : "s"} pending`);
  const spent = usageSummary(agent.subtreeUsage);
  if (spent) parts.push(`· ${spent}`);
  if (activity && agent.state === "running") parts.push(`· ${activity}`);
  return parts.join(" ");
}

/**
 * The final tree as JSON: the run's usage, and agents in tree order with their usage, tool errors
 * and child ids (`draining` and `pendingPermissions` only when set, so trees without them read as before).
 */
export function treeJson(tracker: RunTracker): Record<string, unknown> {
  const { view } = tracker;
  return {
    runId: view.runId,
    rootAgentId: view.rootAgentId,
    asOf: view.asOf,
    over: tracker.isOver(),
    usage: view.usage,
    agents: tracker.ordered().map((a) => ({
      agentId: a.agentId,
      parentAgentId: a.parentAgentId,
      depth: a.depth,
      spawnIndex: a.spawnIndex,
      specName: a.specName,
      state: a.state,
      outcome: a.outcome,
      ...(a.pausedBy ? { pausedBy: a.pausedBy } : {}),
      ...(a.draining ? { draining: true } : {}),
      ...(a.pendingPermissions.length > 0 ? { pendingPermissions: a.pendingPermissions } : {}),
      toolErrors: a.toolErrors,
      usage: a.usage,
      subtreeUsage: a.subtreeUsage,
      children: a.children,
    })),
  };
}
