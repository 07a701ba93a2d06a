import type { FastifyInstance } from "fastify";
import { AdoptBody, ForkBody, WaitBody } from "../../api/forks.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";
import { abortOnDisconnect } from "../disconnect.ts";
import { agentIdParam, runIdParam } from "../path-params.ts";

type AgentParams = { Params: { agentId: string } };

/** Spec sections 4.23 to 4.26: fork, wait for several, changes, adopt; schemas from src/api/forks.ts. */
export function forkRoutes(app: FastifyInstance, swarm: SwarmApi): void {
  app.post<AgentParams>("/agents/:agentId/fork", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const body = parseOrThrow(ForkBody, request.body, "body");
    return reply.code(202).send(await swarm.fork(agentId, body));
  });

  app.get<AgentParams>("/agents/:agentId/changes", async (request) =>
    swarm.changes(agentIdParam(request.params.agentId)),
  );

  app.post<AgentParams>("/agents/:agentId/adopt", async (request) => {
    const agentId = agentIdParam(request.params.agentId);
    return swarm.adopt(agentId, parseOrThrow(AdoptBody, request.body, "body"));
  });

  app.post<{ Params: { runId: string } }>("/runs/:runId/wait", async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    const body = parseOrThrow(WaitBody, request.body, "body");
    return swarm.waitFor(runId, body, abortOnDisconnect(reply.raw));
  });
}
