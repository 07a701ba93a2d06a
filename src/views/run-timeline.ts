import type { Activity, AgentTimeline, RunTimeline, TimelineStatus } from "../api/timeline.ts";
import { decodeRunEvent } from "../ledger/run-events.ts";
import type { StoredEvent } from "./run-view.ts";

/**
 * A run's timeline: each agent's activity over time, folded from its persisted events. Pure over
 * the timeline, like `foldEvent`: `GET /runs/:runId/timeline` folds the ledger up to its `asOf`,
 * and the console goes on folding the stream after it with the same function.
 */
export interface Timeline {
  runId: string;
  asOf: number;
  /** In spawn order. */
  agents: Map<string, AgentTimeline>;
}

export function createTimeline(runId: string): Timeline {
  return { runId, asOf: 0, agents: new Map() };
}

/** The event types that move a timeline. */
export const TIMELINE_TYPES: ReadonlySet<string> = new Set([
  "agent_spawned",
  "agent_state_changed",
  "agent_start",
  "agent_end",
  "handle_settled",
  "permission_request",
  "permission_resolved",
  "agent_hibernated",
  "agent_woke",
  "agent_draining",
  "agent_ended",
]);

/**
 * Fold one persisted event (in seq order; one at or below `asOf` is ignored). The span an event
 * ends closes at its `at`; a new one opens there when the agent's activity changed.
 */
export function foldTimeline(timeline: Timeline, stored: StoredEvent): void {
  if (stored.seq <= timeline.asOf) return;
  timeline.asOf = stored.seq;
  if (!TIMELINE_TYPES.has(stored.type)) return;
  const event = decodeRunEvent(stored);
  if (event === null || event.agentId === null) return;
  if (event.type === "agent_spawned") {
    const status: TimelineStatus = {
      state: event.data.waitFor.length > 0 ? "spawning" : "provisioning",
      turn: false,
      approvals: 0,
      hibernated: false,
      draining: false,
    };
    timeline.agents.set(event.agentId, { agentId: event.agentId, spans: [], status });
    open(timeline.agents.get(event.agentId)!, event.at);
    return;
  }
  const agent = timeline.agents.get(event.agentId);
  if (agent === undefined || agent.status.state === "ended") return;
  const { status } = agent;
  switch (event.type) {
    case "agent_state_changed":
      status.state = event.data.to;
      break;
    case "agent_start":
      status.turn = true;
      break;
    case "agent_end":
    case "handle_settled":
      status.turn = false;
      break;
    case "permission_request":
      status.approvals++;
      break;
    case "permission_resolved":
      status.approvals = Math.max(0, status.approvals - 1);
      break;
    case "agent_hibernated":
      status.hibernated = true;
      break;
    case "agent_woke":
      status.hibernated = false;
      break;
    case "agent_draining":
      status.draining = true;
      break;
    case "agent_ended":
      status.state = "ended";
      close(agent, Math.max(event.data.endedAt, agent.spans.at(-1)?.from ?? 0));
      return;
  }
  open(agent, event.at);
}

/** What the agent is doing given its status; null once it ended. */
export function activityOf(status: TimelineStatus): Activity | null {
  switch (status.state) {
    case "ended":
      return null;
    case "spawning":
      return "waiting";
    case "provisioning":
      return "provisioning";
    case "paused":
      return "paused";
    case "running":
      if (status.approvals > 0) return "approval";
      if (status.hibernated) return "hibernated";
      if (status.draining) return "draining";
      return status.turn ? "turn" : "idle";
  }
}

/** Opens a span at `at` when the activity changed (the current one closes there). */
function open(agent: AgentTimeline, at: number): void {
  const activity = activityOf(agent.status);
  const current = agent.spans.at(-1);
  if (current?.to === null && current.activity === activity) return;
  close(agent, at);
  if (activity !== null) agent.spans.push({ activity, from: Math.max(at, current?.from ?? at), to: null });
}

function close(agent: AgentTimeline, at: number): void {
  const current = agent.spans.at(-1);
  if (current?.to === null) current.to = Math.max(at, current.from);
}

/** The answer of `GET /runs/:runId/timeline`. */
export function timelineAnswer(timeline: Timeline): RunTimeline {
  return { runId: timeline.runId, asOf: timeline.asOf, agents: [...timeline.agents.values()] };
}

/** A timeline from that answer, to fold the events after its `asOf` into (the console). */
export function timelineFrom(answer: RunTimeline): Timeline {
  return {
    runId: answer.runId,
    asOf: answer.asOf,
    agents: new Map(answer.agents.map((agent) => [agent.agentId, agent])),
  };
}
