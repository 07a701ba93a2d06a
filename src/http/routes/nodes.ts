import type { FastifyInstance } from "fastify";
import type { SwarmApi } from "../../swarm-api.ts";

/** Spec section 4.22: the machines sandboxes run on, answered as src/api/nodes.ts declares. */
export function nodeRoutes(app: FastifyInstance, swarm: SwarmApi): void {
  app.get("/nodes", async () => swarm.listNodes());
}
