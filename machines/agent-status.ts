import type { SnapshotFrom } from "xstate";
import type { AgentStatus } from "../src/swarm-api.ts";
import type { agentMachine } from "./agent.machine.ts";

type AgentSnapshot = Pick<SnapshotFrom<typeof agentMachine>, "hasTag" | "context">;

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
