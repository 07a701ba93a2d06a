import { randomBytes, randomUUID } from "node:crypto";
import { decideSpawn, type Budget } from "../machines/budget.ts";
import { ancestorsOf } from "../machines/tree.ts";
import { SwarmError } from "../src/errors.ts";
import { parentMap } from "../src/views/run-view.ts";
import { DEFAULT_MAX_AGENTS, DEFAULT_SPAWN_DEPTH } from "../src/spec/agent-spec.ts";
import { childGrants, rootGrants } from "../src/spec/grants.ts";
import type { CreateRunRequest, CreateRunResponse, SpawnRequest, SpawnResponse } from "../src/swarm-api.ts";
import { requireLive } from "./agent-state.ts";
import { addAgent, appendToRun, openRun, type AgentMeta, type ServiceCore } from "./service-core.ts";

export const newRunId = () => `r_${randomBytes(8).toString("hex")}`;
export const newAgentId = () => `a_${randomBytes(8).toString("hex")}`;

export const agentKey = (agentId: string) => `agent!${agentId}`;
export const runKey = (runId: string) => `run!${runId}`;
export const idempotencyKey = (runId: string, key: string) => `idem!${runId}!${key}`;

/** POST /runs: record the run and its root, then start provisioning in the background. */
export async function createRun(core: ServiceCore, request: CreateRunRequest): Promise<CreateRunResponse> {
  const runId = newRunId();
  const rootAgentId = newAgentId();
  // The request's budget overrides the spec's for the root (spec §2.5).
  const budget: Budget = {
    spawnDepth: request.budget?.spawnDepth ?? request.spec.spawnDepth ?? DEFAULT_SPAWN_DEPTH,
    maxAgents: request.budget?.maxAgents ?? request.spec.maxAgents ?? DEFAULT_MAX_AGENTS,
  };
  const grants = rootGrants(request.spec, core.config.limits, "body.spec");
  const meta: AgentMeta = { runId, sandboxId: randomUUID(), spec: request.spec, grants, budget, keepAlive: request.keepAlive ?? false };
  const run = openRun(core, runId);
  run.meta.set(rootAgentId, meta);
  await appendToRun(
    core,
    run,
    [
      { type: "run_started", agentId: null, data: { runId } },
      {
        type: "agent_spawned",
        agentId: rootAgentId,
        data: { parentAgentId: null, runId, specName: request.spec.name, depth: 0, spawnIndex: 0, sandboxId: null, waitFor: [], prompt: request.prompt ?? null },
      },
    ],
    [
      { key: runKey(runId), value: JSON.stringify({ rootAgentId }) },
      { key: agentKey(rootAgentId), value: JSON.stringify(meta) },
    ],
  );
  addAgent(core, run, agentInput(core, rootAgentId, runId, meta, "provisioning", request.prompt), null, []);
  return { runId, rootAgentId, state: "provisioning" };
}

/**
 * POST /runs/:runId/agents and the agents' own `spawn_agent`: one path, so budgets, `waitFor`,
 * ledger events and subtree controls apply alike. The budget decision and counters are taken
 * synchronously, before any write, so concurrent spawns cannot both squeeze under a cap.
 */
export async function spawnAgent(core: ServiceCore, runId: string, request: SpawnRequest, root = "body"): Promise<SpawnResponse> {
  const run = core.runs.get(runId);
  if (!run) throw new SwarmError("RUN_NOT_FOUND", `run ${runId} does not exist`);
  const parent = run.view.agents.get(request.parentAgentId);
  if (!parent) throw new SwarmError("AGENT_NOT_FOUND", `parentAgentId ${request.parentAgentId} is not an agent of run ${runId}`);
  const waitFor = [...new Set(request.waitFor ?? [])];
  const outside = waitFor.filter((id) => !run.view.agents.has(id));
  if (outside.length > 0) throw new SwarmError("INVALID_BODY", `body.waitFor: ${outside.join(", ")} ${outside.length === 1 ? "is not an agent" : "are not agents"} of run ${runId}`);

  if (request.idempotencyKey) {
    const earlier = await core.ledger.getIndex(idempotencyKey(runId, request.idempotencyKey));
    if (earlier) return JSON.parse(earlier) as SpawnResponse;
  }
  // A parent without an actor (ended, or not held by the supervisor) cannot be forked.
  const parentState = requireLive(run, parent.agentId);

  const parentMeta = run.meta.get(parent.agentId);
  if (!parentMeta) throw new SwarmError("INTERNAL", `no budget recorded for ${parent.agentId}`);
  // Asking for more than the parent has is a bad request, refused before anything is recorded.
  const grants = childGrants(parentMeta.grants, request.spec, `${root}.spec`);
  const parents = parentMap(run.view);
  const budgets = Object.fromEntries([...run.meta.entries()].map(([id, m]) => [id, m.budget]));
  const decision = decideSpawn({
    parentId: parent.agentId,
    parents,
    budgets,
    descendants: run.descendants,
    tighten: [{ spawnDepth: request.spec.spawnDepth, maxAgents: request.spec.maxAgents }, request.budget],
  });

  const agentId = newAgentId();
  const state: SpawnResponse["state"] = waitFor.length > 0 ? "spawning" : "provisioning";
  const response: SpawnResponse = { agentId, state };
  const meta: AgentMeta = {
    runId,
    sandboxId: randomUUID(),
    spec: request.spec,
    grants,
    budget: decision.ok ? decision.child : { spawnDepth: 0, maxAgents: 0 },
    keepAlive: request.keepAlive ?? false,
  };
  run.meta.set(agentId, meta);
  if (decision.ok) for (const id of [parent.agentId, ...ancestorsOf(parent.agentId, parents)]) run.descendants[id] = (run.descendants[id] ?? 0) + 1;

  const spawned = {
    type: "agent_spawned",
    agentId,
    data: {
      parentAgentId: parent.agentId,
      runId,
      specName: request.spec.name,
      depth: parent.depth + 1,
      spawnIndex: parent.children.length,
      sandboxId: null,
      waitFor,
      prompt: request.prompt ?? null,
    },
  };
  const refused = decision.ok
    ? []
    : [
        { type: "budget_denied", agentId: parent.agentId, data: { dimension: decision.dimension, remaining: decision.remaining, childAgentId: agentId } },
        {
          type: "agent_ended",
          agentId,
          data: { outcome: "budget-exceeded", endedAt: Date.now(), error: `spawn refused by the ${decision.dimension} budget of ${parent.agentId}` },
        },
      ];
  const put = [{ key: agentKey(agentId), value: JSON.stringify(meta) }];
  if (request.idempotencyKey) put.push({ key: idempotencyKey(runId, request.idempotencyKey), value: JSON.stringify(response) });
  core.agentRuns.set(agentId, runId);
  await appendToRun(core, run, [spawned, ...refused], put);

  if (!decision.ok) {
    run.actor.send({ type: "agent.settled", agentId }); // waitFor on a refused agent is satisfied by its end
    return response;
  }
  // A child forked under a paused parent joins the pause (spec §3 rule 3).
  const pendingPause = parentState === "paused" ? "cascade" : undefined;
  addAgent(core, run, agentInput(core, agentId, runId, meta, state, request.prompt, pendingPause), parent.agentId, waitFor);
  return response;
}

export function agentInput(
  core: ServiceCore,
  agentId: string,
  runId: string,
  meta: AgentMeta,
  start: "spawning" | "provisioning",
  prompt: string | undefined,
  pendingPause?: "cascade",
) {
  return {
    agentId,
    runId,
    sandboxId: meta.sandboxId,
    start,
    prompt,
    keepAlive: meta.keepAlive,
    turnMaxMs: core.config.turnMaxMs,
    pendingPause,
  };
}
