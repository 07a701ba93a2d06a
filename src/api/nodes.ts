import { z } from "zod";
import { operation } from "./operation.ts";

/** The machines sandboxes run on (spec section 4.22): what the runtime's `nodes()` answers. */

const Count = z.number().min(0);
export const NodeViewSchema = z
  .strictObject({
    id: z.string().describe("The node's id: the swarm's node id on the cluster runtime, `local` on the others."),
    hostname: z.string(),
    state: z
      .enum(["ready", "down", "unknown", "disconnected"])
      .describe("The swarm's status of the node; always `ready` on the single-host runtimes."),
    availability: z
      .enum(["active", "pause", "drain"])
      .describe(
        "`active`: new sandboxes may be placed on it; `pause`: its sandboxes stay, no new one is placed; `drain`: its sandboxes are moved off (lost, for swarmd).",
      ),
    sandboxes: z.number().int().min(0).describe("Live sandboxes of this daemon's data folder on the node."),
    cpus: Count.describe("The node's CPU cores."),
    memoryMiB: Count.describe("The node's memory in MiB."),
    reservedCpus: Count.describe("The sum of the CPU limits of this daemon's live sandboxes on the node."),
    reservedMemoryMiB: Count.describe(
      "The sum of the memory limits (MiB) of this daemon's live sandboxes on the node.",
    ),
    engine: z
      .enum(["reachable", "unreachable"])
      .describe(
        "Whether the daemon reaches the node's container engine; always `reachable` on the single-host runtimes.",
      ),
    reason: z.string().optional().describe("Why the node is unreachable or unusable, when the runtime knows."),
  })
  .describe("One machine sandboxes run on.");

export const NodeListSchema = z
  .strictObject({
    nodes: z
      .array(NodeViewSchema)
      .describe("Every node of the runtime: one, `local`, on the process, docker and simulated runtimes."),
  })
  .meta({
    examples: [
      {
        nodes: [
          {
            id: "local",
            hostname: "build-7",
            state: "ready",
            availability: "active",
            sandboxes: 3,
            cpus: 8,
            memoryMiB: 15_892,
            reservedCpus: 3,
            reservedMemoryMiB: 6_144,
            engine: "reachable",
          },
        ],
      },
    ],
  });

export const listNodes = operation({
  method: "get",
  path: "/nodes",
  operationId: "listNodes",
  tag: "nodes",
  summary: "List the machines sandboxes run on",
  description:
    "The runtime's nodes as it sees them now, with this daemon's live sandboxes and the CPU and memory limits they reserve on each. Runtimes on one host answer one node, `local`.",
  ok: { 200: { description: "The nodes.", json: NodeListSchema } },
  errors: { 503: "The runtime did not answer (`RUNTIME_UNAVAILABLE`)." },
});

/** `GET /nodes`: one machine sandboxes run on. */
export type NodeView = z.output<typeof NodeViewSchema>;
