import type { SnapshotFrom } from "xstate";
import type { AgentStatus } from "../src/swarm-api.ts";
import type { agentMachine } from "./agent.machine.ts";

type AgentSnapshot = Pick<SnapshotFrom<typeof agentMachine>, "hasTag" | "context" | "matches">;

/** The statuses in the order the tags are read; exactly one is on at a time. */
const STATUSES = [
  "spawning",
  "provisioning",
  "running",
  "paused",
  "ending",
  "done",
  "aborted",
] as const satisfies readonly AgentStatus[];

/**
 * An agent's status as its machine has it, read from the state's tags: the one source every
 * decision of the service uses. The ledger view lags it by the writes in flight and serves only
 * snapshots and replay.
 */
export function statusOf(snapshot: AgentSnapshot): AgentStatus {
  return STATUSES.find((status) => snapshot.hasTag(status)) ?? "done";
}

/** A subtree pause already holds the agent, to be applied once its sandbox exists. */
export const holdsPendingPause = (snapshot: AgentSnapshot): boolean => snapshot.context.pendingPause !== null;

/**
 * Between turns: idle (awake, hibernating or asleep) or paused, with no turn in flight and none
 * waiting to start: what a fork copies (its conversation then ends with its last settled turn) and
 * what an adopt writes into.
 */
export function isBetweenTurns(snapshot: AgentSnapshot): boolean {
  const { inflight, prompts, steers, steering, resend } = snapshot.context;
  if (inflight > 0 || prompts.length > 0 || steers.length > 0 || steering.length > 0 || resend !== null) return false;
  return snapshot.matches({ live: { running: "idle" } }) || snapshot.matches({ live: "paused" });
}
