import type { FastifyInstance } from "fastify";
import { PromptBody, ResultQuery, ScopeBody, SetBudgetBody, SteerBody, StopBody } from "../../api/agents.ts";
import { PermissionAnswerBody } from "../../api/permissions.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";
import { abortOnDisconnect } from "../disconnect.ts";
import { agentIdParam, permissionIdParam } from "../path-params.ts";

type AgentParams = { Params: { agentId: string } };

/**
 * Spec sections 4.6 to 4.12; control answers follow docs/design.md "Control responses". Each route
 * parses with the schemas its operation in src/api/agents.ts names.
 */
export function agentRoutes(app: FastifyInstance, swarm: SwarmApi): void {
  app.get<AgentParams>("/agents/:agentId", async (request) => swarm.getAgent(agentIdParam(request.params.agentId)));

  // The agent's machine: state value, tags, latest transitions (an offline stand-in for the Stately inspector).
  app.get<AgentParams>("/agents/:agentId/machine", async (request) =>
    swarm.getMachine(agentIdParam(request.params.agentId)),
  );

  app.post<AgentParams>("/agents/:agentId/budget", async (request) => {
    const agentId = agentIdParam(request.params.agentId);
    return swarm.setBudget(agentId, parseOrThrow(SetBudgetBody, request.body, "body"));
  });

  app.post<AgentParams>("/agents/:agentId/prompt", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const { text } = parseOrThrow(PromptBody, request.body, "body");
    await swarm.prompt(agentId, text);
    return reply.code(202).send({ accepted: true });
  });

  app.post<AgentParams>("/agents/:agentId/steer", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const body = parseOrThrow(SteerBody, request.body, "body");
    return reply.code(202).send(await swarm.steer(agentId, body));
  });

  app.post<AgentParams>("/agents/:agentId/pause", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const { scope } = parseOrThrow(ScopeBody, request.body, "body");
    return reply.code(202).send(await swarm.pause(agentId, scope));
  });

  app.post<AgentParams>("/agents/:agentId/resume", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const { scope } = parseOrThrow(ScopeBody, request.body, "body");
    return reply.code(202).send(await swarm.resume(agentId, scope));
  });

  app.post<AgentParams>("/agents/:agentId/stop", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const body = parseOrThrow(StopBody, request.body, "body");
    return reply.code(202).send(await swarm.stop(agentId, body));
  });

  app.post<{ Params: { agentId: string; requestId: string } }>(
    "/agents/:agentId/permissions/:requestId",
    async (request, reply) => {
      const agentId = agentIdParam(request.params.agentId);
      const requestId = permissionIdParam(request.params.requestId);
      const answer = parseOrThrow(PermissionAnswerBody, request.body, "body");
      return reply.code(202).send(await swarm.resolvePermission(agentId, requestId, answer));
    },
  );

  app.get<AgentParams>("/agents/:agentId/result", async (request, reply) => {
    const agentId = agentIdParam(request.params.agentId);
    const { wait } = parseOrThrow(ResultQuery, request.query, "query", "INVALID_QUERY");
    const view = await swarm.result(agentId, wait, abortOnDisconnect(reply.raw));
    return reply.code(view.state === "settled" ? 200 : 202).send(view);
  });
}
