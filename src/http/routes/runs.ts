import type { FastifyInstance } from "fastify";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";
import { CreateRunBody, runIdParam, SpawnBody } from "../schemas.ts";

/** Spec sections 4.1, 4.2, 4.3 and 4.5. */
export function runRoutes(app: FastifyInstance, swarm: SwarmApi): void {
  app.post("/runs", async (request, reply) => {
    const body = parseOrThrow(CreateRunBody, request.body, "body");
    return reply.code(202).send(await swarm.createRun(body));
  });

  app.get<{ Params: { runId: string } }>("/runs/:runId", async (request) => swarm.getRun(runIdParam(request.params.runId)));

  app.delete<{ Params: { runId: string } }>("/runs/:runId", async (request, reply) => {
    await swarm.deleteRun(runIdParam(request.params.runId));
    return reply.code(204).send();
  });

  app.post<{ Params: { runId: string } }>("/runs/:runId/agents", async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    const body = parseOrThrow(SpawnBody, request.body, "body");
    return reply.code(202).send(await swarm.spawn(runId, body));
  });
}
