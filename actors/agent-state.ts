import { SwarmError } from "../src/errors.ts";
import type { RunHandle } from "./service-core.ts";

/** Where an agent's machine is, in the terms the routes decide on. */
export type MachineState = "spawning" | "provisioning" | "running" | "paused" | "ending" | "ended" | "unknown";

/**
 * The agent's live state as its machine sees it (ahead of the ledger by at most the writes in
 * flight). Routes use it to refuse controls on agents that are not live (409).
 */
export function agentState(run: RunHandle, agentId: string): MachineState {
  const child = run.actor.getSnapshot().children[agentId];
  if (!child) {
    const record = run.view.agents.get(agentId);
    return record && (record.state === "done" || record.state === "aborted") ? "ended" : "unknown";
  }
  const snapshot = child.getSnapshot();
  if (snapshot.matches({ unforked: "spawning" })) return "spawning";
  if (snapshot.matches({ unforked: "provisioning" })) return "provisioning";
  if (snapshot.matches({ live: "paused" }) || snapshot.matches({ live: "pausing" }) || snapshot.matches({ live: "resuming" })) return "paused";
  if (snapshot.matches("live")) return "running";
  if (snapshot.matches("stopping") || snapshot.matches("finishing")) return "ending";
  return "ended";
}

/** Live as the routes count it: neither ended nor on its way out, and held by the run's supervisor. */
export const isLive = (state: MachineState) => state !== "ended" && state !== "ending" && state !== "unknown";

/** The agent's state, or 409 when it is not live. */
export function requireLive(run: RunHandle, agentId: string): MachineState {
  const state = agentState(run, agentId);
  if (!isLive(state)) throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
  return state;
}

/** Whether a subtree pause already holds the agent before its sandbox exists. */
export function hasPendingPause(run: RunHandle, agentId: string): boolean {
  const child = run.actor.getSnapshot().children[agentId];
  return Boolean(child?.getSnapshot().context.pendingPause);
}
