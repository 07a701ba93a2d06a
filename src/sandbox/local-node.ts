import { availableParallelism, hostname, totalmem } from "node:os";
import { LOCAL_NODE_ID, type NodeInfo } from "./runtime.ts";

const MiB = 1024 * 1024;

/**
 * The one node of a single-host runtime (process, docker, simulated): the daemon's machine, with
 * the limits of the live sandboxes given (the ones the runtime applied to each).
 */
export function localNode(live: readonly { cpus: number; memoryMiB: number }[]): NodeInfo {
  return {
    id: LOCAL_NODE_ID,
    hostname: hostname(),
    state: "ready",
    availability: "active",
    sandboxes: live.length,
    cpus: availableParallelism(),
    memoryMiB: Math.floor(totalmem() / MiB),
    // Rounded so that ten sandboxes of 0.1 reserve 1, not 0.9999999999999999.
    reservedCpus: Math.round(live.reduce((sum, l) => sum + l.cpus, 0) * 1000) / 1000,
    reservedMemoryMiB: live.reduce((sum, l) => sum + l.memoryMiB, 0),
    engine: "reachable",
  };
}
