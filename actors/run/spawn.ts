import { randomBytes, randomUUID } from "node:crypto";
import { type Budget, decideSpawn } from "../../machines/budget.ts";
import { SwarmError } from "../../src/errors.ts";
import { agentKey, idempotencyKey } from "../../src/ledger/ledger-keys.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { AgentSpec } from "../../src/spec/agent-spec.ts";
import { DEFAULT_MAX_AGENTS, DEFAULT_SPAWN_DEPTH } from "../../src/spec/agent-spec.ts";
import { type ApproveRule, combinePolicies, DAEMON_GATED_TOOLS } from "../../src/spec/approve.ts";
import { childGrants, rootGrants } from "../../src/spec/grants.ts";
import type {
  CreateRunRequest,
  CreateRunResponse,
  SpawnRequest,
  SpawnResponse,
  SpendCaps,
} from "../../src/swarm-api.ts";
import type { AgentMeta } from "./agent-index.ts";
import { markDraining } from "./drain.ts";
import type { Run } from "./run.ts";
import { childSpendCaps } from "./spend.ts";

/** A root's caps: the request's budget over the spec's. */
function rootSpendCaps([spec, budget]: [SpendCaps, SpendCaps | undefined]): SpendCaps {
  const maxTokens = budget?.maxTokens ?? spec.maxTokens;
  const maxCostUsd = budget?.maxCostUsd ?? spec.maxCostUsd;
  return { ...(maxTokens !== undefined ? { maxTokens } : {}), ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) };
}

/**
 * The agent's approval policy and timeout: its parent's rules and its own; its own timeout, else its
 * parent's. Rules the harness enforces are refused where the runtime cannot keep the harness out of
 * the agent's reach: a gate the agent could remove would be no gate (fail closed).
 */
function approvalPolicy(
  run: Run,
  parent: Pick<AgentMeta, "approve" | "approveTimeoutMs"> | null,
  spec: AgentSpec,
  root: string,
): Pick<AgentMeta, "approve" | "approveTimeoutMs"> {
  const combined = combinePolicies(parent?.approve ?? [], spec.approve ?? []);
  if ("problem" in combined) throw new SwarmError("INVALID_BODY", `${root}.approve: ${combined.problem}`);
  if (!run.deps.runtime.harnessOutOfReach && combined.rules.some(heldByHarness)) {
    throw new SwarmError(
      "INVALID_BODY",
      `${root}.approve: rules for bash, read, write, edit or "*" are enforced by the harness, which these sandboxes cannot keep out of the agent's reach (the process runtime runs agents as the daemon's user unless the daemon runs as root with bubblewrap); only spawn_agent and await_result can be gated here`,
    );
  }
  const approveTimeoutMs = spec.approveTimeoutMs ?? parent?.approveTimeoutMs;
  return { approve: combined.rules, ...(approveTimeoutMs !== undefined ? { approveTimeoutMs } : {}) };
}

const heldByHarness = (rule: ApproveRule): boolean => rule === "*" || !DAEMON_GATED_TOOLS.has(rule.tool);

export const newRunId = () => `r_${randomBytes(8).toString("hex")}`;
const newAgentId = () => `a_${randomBytes(8).toString("hex")}`;

/** The `agent_spawned` event of an agent: written by the run's start and by every spawn alike. */
function spawnedEvent(
  run: Run,
  agentId: string,
  place: { parentAgentId: string | null; depth: number; spawnIndex: number },
  specName: string,
  waitFor: string[],
  prompt: string | undefined,
): RunEventInput {
  return {
    type: "agent_spawned",
    agentId,
    data: { ...place, runId: run.runId, specName, sandboxId: null, waitFor, prompt: prompt ?? null },
  };
}

/** POST /runs: record the run and its root, then start provisioning in the background. */
export async function startRun(run: Run, request: CreateRunRequest): Promise<CreateRunResponse> {
  const rootAgentId = newAgentId();
  // The request's budget overrides the spec's for the root (spec §2.5).
  const budget: Budget = {
    spawnDepth: request.budget?.spawnDepth ?? request.spec.spawnDepth ?? DEFAULT_SPAWN_DEPTH,
    maxAgents: request.budget?.maxAgents ?? request.spec.maxAgents ?? DEFAULT_MAX_AGENTS,
  };
  const grants = rootGrants(request.spec, run.deps.config.limits, "body.spec");
  const spend = rootSpendCaps([request.spec, request.budget]);
  if (request.spec.model) run.deps.gateway.catalog.resolve(request.spec.model, "body.spec.model");
  const policy = approvalPolicy(run, null, request.spec, "body.spec");
  const meta: AgentMeta = {
    runId: run.runId,
    sandboxId: randomUUID(),
    spec: request.spec,
    grants,
    budget,
    spend,
    keepAlive: request.keepAlive ?? false,
    ...policy,
  };
  run.track(rootAgentId, { meta, parentAgentId: null, depth: 0, waitFor: [] });
  await run.writer.append(
    [
      { type: "run_started", agentId: null, data: { runId: run.runId } },
      spawnedEvent(
        run,
        rootAgentId,
        { parentAgentId: null, depth: 0, spawnIndex: 0 },
        request.spec.name,
        [],
        request.prompt,
      ),
    ],
    [{ key: agentKey(rootAgentId), value: JSON.stringify(meta) }],
  );
  run.addAgent(rootAgentId, { start: "provisioning", prompt: request.prompt });
  return { runId: run.runId, rootAgentId, state: "provisioning" };
}

/**
 * POST /runs/:runId/agents and the agents' own `spawn_agent`: one path, so budgets, `waitFor`,
 * ledger events and subtree controls apply alike. The budget decision and counters are taken
 * synchronously, before any write, so concurrent spawns cannot both squeeze under a cap.
 */
export async function spawnAgent(run: Run, request: SpawnRequest, root = "body"): Promise<SpawnResponse> {
  const parent = run.view.agents.get(request.parentAgentId);
  if (!parent)
    throw new SwarmError(
      "AGENT_NOT_FOUND",
      `parentAgentId ${request.parentAgentId} is not an agent of run ${run.runId}`,
    );
  const waitFor = [...new Set(request.waitFor ?? [])];
  const outside = waitFor.filter((id) => !run.has(id));
  if (outside.length > 0)
    throw new SwarmError(
      "INVALID_BODY",
      `${root}.waitFor: ${outside.join(", ")} ${outside.length === 1 ? "is not an agent" : "are not agents"} of run ${run.runId}`,
    );

  if (request.idempotencyKey) {
    const earlier = await run.deps.ledger.getIndex(idempotencyKey(run.runId, request.idempotencyKey));
    if (earlier) return JSON.parse(earlier) as SpawnResponse;
  }
  // A parent without an actor (ended, or not held by the supervisor) cannot be forked.
  const parentStatus = run.requireLive(parent.agentId);
  if (run.drainOf(parent.agentId))
    throw new SwarmError("AGENT_DRAINING", `agent ${parent.agentId} is draining: it starts no new children`);
  const parentEntry = run.agents.require(parent.agentId);
  const parentMeta = parentEntry.meta;
  // Asking for more than the parent has is a bad request, refused before anything is recorded.
  const grants = childGrants(parentMeta.grants, request.spec, `${root}.spec`);
  const policy = approvalPolicy(run, parentMeta, request.spec, `${root}.spec`);
  if (request.spec.model) run.deps.gateway.catalog.resolve(request.spec.model, `${root}.spec.model`);
  const decision = decideSpawn({
    parentId: parent.agentId,
    parents: run.agents.parents(),
    budgetOf: (agentId) => run.agents.budgetOf(agentId),
    descendants: run.agents.descendants(),
    tighten: [{ spawnDepth: request.spec.spawnDepth, maxAgents: request.spec.maxAgents }, request.budget],
  });

  const agentId = newAgentId();
  const response: SpawnResponse = { agentId, state: waitFor.length > 0 ? "spawning" : "provisioning" };
  const meta: AgentMeta = {
    runId: run.runId,
    sandboxId: randomUUID(),
    spec: request.spec,
    grants,
    budget: decision.ok ? decision.child : { spawnDepth: 0, maxAgents: 0 },
    spend: childSpendCaps(run, parent.agentId, [request.spec, request.budget]),
    keepAlive: request.keepAlive ?? false,
    ...policy,
  };
  const place = {
    parentAgentId: parent.agentId,
    depth: parentEntry.depth + 1,
    spawnIndex: run.agents.childCount(parent.agentId),
  };
  run.track(agentId, { meta, parentAgentId: parent.agentId, depth: place.depth, waitFor });
  if (decision.ok) run.agents.countSpawn(parent.agentId);

  const events: RunEventInput[] = [spawnedEvent(run, agentId, place, request.spec.name, waitFor, request.prompt)];
  if (!decision.ok) {
    const error = `spawn refused by the ${decision.dimension} budget of ${parent.agentId}`;
    events.push(
      {
        type: "budget_denied",
        agentId: parent.agentId,
        data: { dimension: decision.dimension, remaining: decision.remaining, childAgentId: agentId },
      },
      { type: "agent_ended", agentId, data: { outcome: "budget-exceeded", endedAt: Date.now(), error } },
    );
  }
  const put = [{ key: agentKey(agentId), value: JSON.stringify(meta) }];
  if (request.idempotencyKey)
    put.push({ key: idempotencyKey(run.runId, request.idempotencyKey), value: JSON.stringify(response) });
  await run.writer.append(events, put);

  if (!decision.ok) {
    run.agents.sandboxGone(agentId);
    run.actor.send({ type: "agent.settled", agentId }); // waitFor on a refused agent is satisfied by its end
    return response;
  }
  // A child forked under a paused parent joins the pause (spec §3 rule 3).
  const pendingPause = parentStatus === "paused" ? ("cascade" as const) : undefined;
  run.addAgent(agentId, { start: response.state, prompt: request.prompt, pendingPause });
  // A subtree drain that reached the parent while this spawn was being recorded takes the child too.
  const drain = run.drainOf(parent.agentId);
  if (drain?.subtree) await markDraining(run, [agentId], drain).recorded;
  return response;
}
