import type { FastifyInstance } from "fastify";
import { PermissionsQuery } from "../../api/permissions.ts";
import { CreateRunBody, DeleteRunQuery, RunListQuery, SpawnBody } from "../../api/runs.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";
import { runIdParam } from "../path-params.ts";

export interface RunRouteDeps {
  swarm: SwarmApi;
  /** End the open event streams of a run that no longer exists (a purge). */
  endStreams(runId: string): void;
}

/** Spec sections 4.1, 4.2, 4.3 and 4.5, with the schemas their operations in src/api/ name. */
export function runRoutes(app: FastifyInstance, { swarm, endStreams }: RunRouteDeps): void {
  app.post("/runs", async (request, reply) => {
    const body = parseOrThrow(CreateRunBody, request.body, "body");
    return reply.code(202).send(await swarm.createRun(body));
  });

  // Every run, newest first, with its agents counted by state.
  app.get("/runs", async (request) => {
    const { limit } = parseOrThrow(RunListQuery, request.query, "query", "INVALID_QUERY");
    return swarm.listRuns(limit);
  });

  app.get<{ Params: { runId: string } }>("/runs/:runId", async (request) =>
    swarm.getRun(runIdParam(request.params.runId)),
  );

  app.delete<{ Params: { runId: string } }>("/runs/:runId", async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    const { purge } = parseOrThrow(DeleteRunQuery, request.query, "query", "INVALID_QUERY");
    try {
      await swarm.deleteRun(runId, { purge });
    } finally {
      // Also when the sweep after the drop failed: the run is gone all the same.
      if (purge && !swarm.hasRun(runId)) endStreams(runId);
    }
    return reply.code(204).send();
  });

  // The run's approval inbox: every agent's requests, oldest first.
  app.get<{ Params: { runId: string } }>("/runs/:runId/permissions", async (request) => {
    const runId = runIdParam(request.params.runId);
    const { state } = parseOrThrow(PermissionsQuery, request.query, "query", "INVALID_QUERY");
    return swarm.listPermissions(runId, state);
  });

  app.post<{ Params: { runId: string } }>("/runs/:runId/agents", async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    const body = parseOrThrow(SpawnBody, request.body, "body");
    return reply.code(202).send(await swarm.spawn(runId, body));
  });
}
