import Docker from "dockerode";
import { SwarmError } from "../../errors.ts";
import { type ClusterSettings, engineOptions } from "./cluster-settings.ts";

/** The swarm manager's engine, and each node's own engine by node id. */
export interface ClusterEngines {
  manager: Docker;
  /** The engine of one node: `RUNTIME_UNAVAILABLE` when SWARM_CLUSTER_NODES names no address for it. */
  node(nodeId: string): Docker;
  /** Whether SWARM_CLUSTER_NODES names the node. */
  knows(nodeId: string): boolean;
  /** Where a node's engine is, for messages (an address, never a credential). */
  where(nodeId: string): string;
}

export function openClusterEngines(settings: ClusterSettings): ClusterEngines {
  const manager = new Docker(engineOptions(settings.manager, settings, "SWARM_CLUSTER_MANAGER"));
  // Options are checked at start, so a bad address stops the daemon rather than a spawn.
  const options = new Map(
    Object.entries(settings.nodes).map(([id, address]) => [
      id,
      engineOptions(address, settings, `SWARM_CLUSTER_NODES (${id})`, id),
    ]),
  );
  const clients = new Map<string, Docker>();
  return {
    manager,
    node(nodeId) {
      const found = clients.get(nodeId);
      if (found) return found;
      const opts = options.get(nodeId);
      if (!opts)
        throw new SwarmError(
          "RUNTIME_UNAVAILABLE",
          `Node ${nodeId} has no engine address in SWARM_CLUSTER_NODES; add ${nodeId}=tcp://<address>:2376.`,
        );
      const client = new Docker(opts);
      clients.set(nodeId, client);
      return client;
    },
    knows: (nodeId) => options.has(nodeId),
    where: (nodeId) => settings.nodes[nodeId] ?? "(no address)",
  };
}
