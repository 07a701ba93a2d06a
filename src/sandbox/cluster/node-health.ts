import type { SandboxChange } from "../runtime.ts";

/** One node as the swarm and swarmd see it at one look. */
export interface NodeLook {
  id: string;
  hostname: string;
  /** The swarm's word: `ready`, `down`, `unknown`, `disconnected`. */
  state: string;
  availability: "active" | "pause" | "drain";
  /** Whether its engine answered swarmd. */
  reachable: boolean;
}

/** What swarmd last told about one sandbox. */
export type SandboxHealth = "fine" | "unreachable" | "lost";

/**
 * The changes one look at the nodes makes for the sandboxes on them (pure). The swarm decides:
 * a node it calls `down`, or one the operator set to `drain`, has lost its sandboxes; a node it
 * still calls `ready` whose engine swarmd cannot reach has its sandboxes unreachable until the
 * engine answers again (or the swarm calls it down). A node the swarm no longer lists is down.
 * `pause` availability changes nothing for the sandboxes already there.
 */
export function healthChanges(
  sandboxes: ReadonlyMap<string, { node: string; health: SandboxHealth; runId: string; agentId: string }>,
  nodes: ReadonlyMap<string, NodeLook>,
): SandboxChange[] {
  const changes: SandboxChange[] = [];
  for (const [sandboxId, { node, health, runId, agentId }] of sandboxes) {
    if (health === "lost") continue;
    const ids = { sandboxId, runId, agentId, node };
    const look = nodes.get(node);
    const lostFor = !look
      ? `node ${node} left the swarm`
      : look.state === "down"
        ? `node ${look.hostname} (${node}) is down: the swarm lost contact with it`
        : look.availability === "drain"
          ? `node ${look.hostname} (${node}) was set to drain: the swarm shuts its tasks down`
          : undefined;
    if (lostFor !== undefined) {
      changes.push({ type: "lost", ...ids, reason: lostFor });
      continue;
    }
    const reachable = look!.reachable;
    if (!reachable && health === "fine") changes.push({ type: "unreachable", ...ids });
    if (reachable && health === "unreachable") changes.push({ type: "reachable", ...ids });
  }
  return changes;
}

/** The health a change leaves a sandbox in. */
export function healthAfter(change: SandboxChange): SandboxHealth {
  return change.type === "lost" ? "lost" : change.type === "unreachable" ? "unreachable" : "fine";
}
