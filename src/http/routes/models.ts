import type { FastifyInstance } from "fastify";
import { ModelListQuery } from "../../api/models.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";

/** Spec section 4.21: the models a spec may name, with the schemas of src/api/models.ts. */
export function modelRoutes(app: FastifyInstance, swarm: SwarmApi): void {
  app.get("/models", async (request) => {
    const filter = parseOrThrow(ModelListQuery, request.query, "query", "INVALID_QUERY");
    return swarm.listModels(filter);
  });
}
