import { randomBytes, randomUUID } from "node:crypto";
import type { AgentStart, PausedBy } from "../../machines/agent.types.ts";
import { type Budget, decideSpawn } from "../../machines/budget.ts";
import { SwarmError } from "../../src/errors.ts";
import type { IndexPut } from "../../src/ledger/ledger.ts";
import { agentKey, idempotencyKey } from "../../src/ledger/ledger-keys.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { SandboxLimits } from "../../src/sandbox/runtime.ts";
import { type AgentSpec, DEFAULT_MAX_AGENTS, DEFAULT_SPAWN_DEPTH } from "../../src/spec/agent-spec.ts";
import { type ApproveRule, combinePolicies, DAEMON_GATED_TOOLS } from "../../src/spec/approve.ts";
import { childGrants, type Grants, rootGrants } from "../../src/spec/grants.ts";
import type {
  AgentStatus,
  CreateRunRequest,
  CreateRunResponse,
  ForkPoint,
  SpawnRequest,
  SpawnResponse,
  SpendCaps,
} from "../../src/swarm-api.ts";
import type { AgentMeta, AgentTable, ForkMeta } from "./agent-table.ts";
import type { Drains } from "./drain.ts";
import type { Spend } from "./spend.ts";
import type { Supervisor } from "./supervisor.ts";

/** What spawning needs of the run. */
export interface SpawnDeps {
  runId: string;
  table: AgentTable;
  /** Whether the ledger has the agent (its `agent_spawned` is folded): who a parent or a `waitFor` may name. */
  recorded(agentId: string): boolean;
  supervisor: Pick<Supervisor, "add" | "settled" | "requireLive" | "drainOf" | "requireNotDraining">;
  append(events: RunEventInput[], put?: IndexPut[]): Promise<unknown>;
  /** The answer recorded for an idempotency key, if any. */
  earlierAnswer(key: string): Promise<string | undefined>;
  /** Refuses (400 naming `field`) a model the daemon's catalogue cannot serve. */
  resolveModel(model: { provider: string; id: string }, field: string): void;
  /** Whether the runtime keeps the harness out of the agent's reach (rules the harness enforces hold only then). */
  harnessOutOfReach: boolean;
  turnMaxMs: number;
  spend: Pick<Spend, "childCaps">;
  drains: Pick<Drains, "mark">;
  /** Tells the daemon which run the agent belongs to. */
  register(agentId: string): void;
  /** Takes back `register` (the agent's write failed). */
  unregister(agentId: string): void;
}

export const newRunId = () => `r_${randomBytes(8).toString("hex")}`;
const newAgentId = () => `a_${randomBytes(8).toString("hex")}`;

const heldByHarness = (rule: ApproveRule): boolean => rule === "*" || !DAEMON_GATED_TOOLS.has(rule.tool);

/** A root's caps: the request's budget over the spec's. */
function rootSpendCaps(spec: SpendCaps, budget: SpendCaps | undefined): SpendCaps {
  const maxTokens = budget?.maxTokens ?? spec.maxTokens;
  const maxCostUsd = budget?.maxCostUsd ?? spec.maxCostUsd;
  return { ...(maxTokens !== undefined ? { maxTokens } : {}), ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) };
}

/**
 * Recording new agents and giving them their actors: the run's root (`POST /runs`), the
 * operator's spawns (`POST /runs/:runId/agents`) and the agents' own `spawn_agent`, one path, so
 * budgets, `waitFor`, ledger events and subtree controls apply alike; and `launch`, the one way an
 * agent gets its actor, which a restart takes too.
 */
export class Spawner {
  constructor(private readonly deps: SpawnDeps) {}

  /**
   * POST /runs: record the run and its root (planned and checked by `planRoot` before the run
   * existed), then start provisioning in the background. A write that fails leaves no agent behind.
   */
  async start(root: RootPlan): Promise<CreateRunResponse> {
    const { deps } = this;
    const { rootAgentId, meta, specName, prompt } = root;
    this.#track(rootAgentId, { meta, parentAgentId: null, depth: 0, waitFor: [] });
    await this.#record([
      {
        agentId: rootAgentId,
        response: { agentId: rootAgentId, state: "provisioning" },
        events: [
          { type: "run_started", agentId: null, data: { runId: deps.runId } },
          this.#spawnedEvent(rootAgentId, { parentAgentId: null, depth: 0, spawnIndex: 0 }, specName, [], prompt),
        ],
        put: [{ key: agentKey(rootAgentId), value: JSON.stringify(meta) }],
        accepted: false, // counted under no parent
        prompt,
      },
    ]);
    this.launch(rootAgentId, { state: "provisioning" }, { prompt });
    return { runId: deps.runId, rootAgentId, state: "provisioning" };
  }

  /**
   * POST /runs/:runId/agents and the agents' own `spawn_agent` (`byAgent`, with `root` "params").
   * The budget decision and counters are taken synchronously, before any write, so concurrent
   * spawns cannot both squeeze under a cap. A spawn a budget refuses is answered as any other (its
   * child ends `budget-exceeded`); when an agent asked for it, its `tool_refused` is in the batch.
   */
  async spawn(request: SpawnRequest, root = "body", byAgent = false): Promise<SpawnResponse> {
    const { deps } = this;
    const parentId = request.parentAgentId;
    if (!deps.recorded(parentId))
      throw new SwarmError("AGENT_NOT_FOUND", `parentAgentId ${parentId} is not an agent of run ${deps.runId}`);
    const waitFor = [...new Set(request.waitFor ?? [])];
    const outside = waitFor.filter((id) => !deps.recorded(id));
    if (outside.length > 0)
      throw new SwarmError(
        "INVALID_BODY",
        `${root}.waitFor: ${outside.join(", ")} ${outside.length === 1 ? "is not an agent" : "are not agents"} of run ${deps.runId}`,
      );

    if (request.idempotencyKey) {
      const earlier = await deps.earlierAnswer(idempotencyKey(deps.runId, request.idempotencyKey));
      if (earlier) return JSON.parse(earlier) as SpawnResponse;
    }
    const checked = this.check(parentId, request.spec, `${root}.spec`);
    const child = this.#prepare(checked, { ...request, waitFor }, byAgent);
    if (request.idempotencyKey)
      child.put.push({
        key: idempotencyKey(deps.runId, request.idempotencyKey),
        value: JSON.stringify(child.response),
      });
    await this.#record([child]);
    await this.#launchPrepared(child, checked);
    return child.response;
  }

  /**
   * Whether a child with `spec` may be spawned under `parentId` now: the parent recorded, live and
   * not draining; the spec within the parent's grants, its approval rules allowed here, its model
   * known. Throws the refusal (409, 400) before anything is recorded; a fork checks once for all
   * its children.
   */
  check(parentId: string, spec: AgentSpec, field: string): CheckedParent {
    const { deps } = this;
    if (!deps.recorded(parentId))
      throw new SwarmError("AGENT_NOT_FOUND", `agent ${parentId} is not an agent of run ${deps.runId}`);
    // A parent without an actor (ended, or not held by the supervisor) cannot be forked.
    const status = deps.supervisor.requireLive(parentId);
    deps.supervisor.requireNotDraining(parentId, "starts no new children");
    const parent = deps.table.require(parentId);
    // Asking for more than the parent has is a bad request, refused before anything is recorded.
    const grants = childGrants(parent.meta.grants, spec, field);
    const policy = approvalPolicy(parent.meta, spec, field, deps.harnessOutOfReach);
    if (spec.model) deps.resolveModel(spec.model, `${field}.model`);
    return { parentId, status, grants, policy };
  }

  /**
   * The children of a fork, checked by `check` before: all recorded in one batch with the forked
   * agent's `agent_forked` (and the answer under `idempotency`, for an agent's own call), then
   * started. Each is a spawn as any other: budgets decide per child.
   */
  async fork(checked: CheckedParent, plan: ForkPlan): Promise<string[]> {
    const { deps } = this;
    const children = plan.prompts.map((prompt, i) =>
      this.#prepare(
        checked,
        { parentAgentId: checked.parentId, spec: plan.spec, prompt, budget: plan.budget, keepAlive: plan.keepAlive },
        plan.byAgent,
        {
          baseId: plan.baseId,
          copy: i + 1,
          of: plan.prompts.length,
          forkedFrom: checked.parentId,
          forkPoint: plan.forkPoint,
          ...(plan.forkPoint.toolCallId !== undefined ? { toolCallId: plan.forkPoint.toolCallId } : {}),
        },
      ),
    );
    const agentIds = children.map((child) => child.agentId);
    const forked: RunEventInput = {
      type: "agent_forked",
      agentId: checked.parentId,
      data: { children: agentIds, forkPoint: plan.forkPoint },
    };
    const put: IndexPut[] = plan.idempotency
      ? [{ key: idempotencyKey(deps.runId, plan.idempotency), value: JSON.stringify({ agentIds }) }]
      : [];
    await this.#record(children, [forked], put);
    for (const child of children) await this.#launchPrepared(child, checked);
    return agentIds;
  }

  /** The answer an earlier call with this idempotency key got, if any. */
  async earlier(key: string): Promise<unknown> {
    const earlier = await this.deps.earlierAnswer(idempotencyKey(this.deps.runId, key));
    return earlier === undefined ? undefined : JSON.parse(earlier);
  }

  /**
   * One child, decided and counted (its place, its budget) but not yet written: its events and
   * index entries. `fork` makes it a fork child.
   */
  #prepare(checked: CheckedParent, request: SpawnRequest, byAgent: boolean, fork?: ForkMeta): PreparedChild {
    const { deps } = this;
    const { parentId } = checked;
    const parent = deps.table.require(parentId);
    const waitFor = request.waitFor ?? [];
    const decision = decideSpawn({
      parentId,
      parents: deps.table.parents(),
      budgetOf: (agentId) => deps.table.budgetOf(agentId),
      descendants: deps.table.descendants(),
      tighten: [{ spawnDepth: request.spec.spawnDepth, maxAgents: request.spec.maxAgents }, request.budget],
    });

    const agentId = newAgentId();
    const response: SpawnResponse = { agentId, state: waitFor.length > 0 ? "spawning" : "provisioning" };
    const meta: AgentMeta = {
      runId: deps.runId,
      sandboxId: randomUUID(),
      spec: request.spec,
      grants: checked.grants,
      budget: decision.ok ? decision.child : { spawnDepth: 0, maxAgents: 0 },
      spend: deps.spend.childCaps(parentId, [request.spec, request.budget]),
      keepAlive: request.keepAlive ?? false,
      ...checked.policy,
      ...(fork ? { fork } : {}),
    };
    const place = { parentAgentId: parentId, depth: parent.depth + 1, spawnIndex: deps.table.childCount(parentId) };
    this.#track(agentId, { meta, parentAgentId: parentId, depth: place.depth, waitFor });
    if (decision.ok) deps.table.countSpawn(parentId);

    const forkedFrom = fork ? { agentId: fork.forkedFrom, forkPoint: fork.forkPoint } : undefined;
    const events: RunEventInput[] = [
      this.#spawnedEvent(agentId, place, request.spec.name, waitFor, request.prompt, forkedFrom),
    ];
    if (!decision.ok) {
      const error = `spawn refused by the ${decision.dimension} budget of ${parentId}`;
      events.push(
        {
          type: "budget_denied",
          agentId: parentId,
          data: { dimension: decision.dimension, remaining: decision.remaining, childAgentId: agentId },
        },
        { type: "agent_ended", agentId, data: { outcome: "budget-exceeded", endedAt: Date.now(), error } },
      );
      if (byAgent) {
        const message = `${error}: its child ${agentId} ended budget-exceeded (${decision.remaining} left)`;
        events.push({
          type: "tool_refused",
          agentId: parentId,
          data: { tool: "spawn_agent", code: "SPAWN_BUDGET_EXCEEDED", message, count: 1 },
        });
      }
    }
    return {
      agentId,
      response,
      events,
      put: [{ key: agentKey(agentId), value: JSON.stringify(meta) }],
      accepted: decision.ok,
      prompt: request.prompt,
    };
  }

  /** Start a recorded child (or, refused by a budget, tell `waitFor` it settled). */
  async #launchPrepared(child: PreparedChild, checked: CheckedParent): Promise<void> {
    const { deps } = this;
    if (!child.accepted) {
      deps.supervisor.settled(child.agentId); // waitFor on a refused agent is satisfied by its end
      return;
    }
    // A child forked under a paused parent joins the pause (spec §3 rule 3).
    const pendingPause = checked.status === "paused" ? ("cascade" as const) : undefined;
    this.launch(child.agentId, { state: child.response.state }, { prompt: child.prompt, pendingPause });
    // A subtree drain that reached the parent while this spawn was being recorded takes the child too.
    const drain = deps.supervisor.drainOf(checked.parentId);
    if (drain?.subtree) await deps.drains.mark([child.agentId], drain).recorded;
  }

  /**
   * Give a recorded agent its actor under the supervisor: the one way an agent gets one, new or
   * after a restart (`counted`: its parent's restored count of live children has it already).
   */
  launch(
    agentId: string,
    start: AgentStart,
    options: { prompt?: string; pendingPause?: PausedBy; counted?: boolean } = {},
  ): void {
    const { meta, parentAgentId, waitFor } = this.deps.table.require(agentId);
    this.deps.supervisor.add(
      {
        agentId,
        runId: this.deps.runId,
        parentAgentId,
        sandboxId: meta.sandboxId,
        keepAlive: meta.keepAlive,
        turnMaxMs: this.deps.turnMaxMs,
        start,
        ...(options.prompt !== undefined ? { prompt: options.prompt } : {}),
        ...(options.pendingPause ? { pendingPause: options.pendingPause } : {}),
      },
      start.state === "spawning" ? waitFor : [],
      options.counted ?? false,
    );
  }

  /** Take an agent into the run's table, and tell the daemon where to find it. */
  #track(agentId: string, entry: Parameters<AgentTable["add"]>[1]): void {
    this.deps.table.add(agentId, entry);
    this.deps.register(agentId);
  }

  /**
   * Write new agents' events (with `events` and `put` after theirs) in one batch. When the write
   * fails (the disk is full, say) every agent is taken out again, from the table, the daemon's
   * directory and its ancestors' spawn counts, so a refused spawn leaves nothing behind.
   */
  async #record(children: PreparedChild[], events: RunEventInput[] = [], put: IndexPut[] = []): Promise<void> {
    try {
      await this.deps.append(
        [...children.flatMap((child) => child.events), ...events],
        [...children.flatMap((child) => child.put), ...put],
      );
    } catch (err) {
      for (const child of [...children].reverse()) {
        const parentAgentId = this.deps.table.get(child.agentId)?.parentAgentId ?? undefined;
        this.deps.table.remove(child.agentId, child.accepted ? parentAgentId : undefined);
        this.deps.unregister(child.agentId);
      }
      throw err;
    }
  }

  /** The `agent_spawned` event of an agent: written by the run's start and by every spawn alike. */
  #spawnedEvent(
    agentId: string,
    place: { parentAgentId: string | null; depth: number; spawnIndex: number },
    specName: string,
    waitFor: string[],
    prompt: string | undefined,
    forkedFrom?: { agentId: string; forkPoint: ForkPoint },
  ): RunEventInput {
    return {
      type: "agent_spawned",
      agentId,
      data: {
        ...place,
        runId: this.deps.runId,
        specName,
        sandboxId: null,
        waitFor,
        prompt: prompt ?? null,
        ...(forkedFrom ? { forkedFrom } : {}),
      },
    };
  }
}

/** A parent `Spawner.check` found fit to take a child of a spec: its status then, and the child's grants and policy. */
export interface CheckedParent {
  parentId: string;
  status: AgentStatus;
  grants: Grants;
  policy: Pick<AgentMeta, "approve" | "approveTimeoutMs">;
}

/** The children of one fork: one per prompt, all of `spec`, from the fork point `baseId`. */
export interface ForkPlan {
  spec: AgentSpec;
  prompts: string[];
  budget?: SpawnRequest["budget"];
  keepAlive: boolean;
  baseId: string;
  forkPoint: ForkPoint;
  /** An agent's own `spawn_agent` (its refusals are its tool errors). */
  byAgent: boolean;
  /** Recorded with the children: a call sent again gets the same ones. */
  idempotency?: string;
}

/** A child decided and counted, not yet written. */
interface PreparedChild {
  agentId: string;
  response: SpawnResponse;
  events: RunEventInput[];
  put: IndexPut[];
  /** Accepted by its budgets (counted under its parent); false for a refused one (and the root). */
  accepted: boolean;
  prompt: string | undefined;
}

/** A new run's root as `planRoot` decided it: everything `Spawner.start` records. */
export interface RootPlan {
  rootAgentId: string;
  meta: AgentMeta;
  specName: string;
  prompt: string | undefined;
}

/** What deciding a root needs of the daemon. */
export interface RootPlanDeps {
  /** The daemon's sandbox limits: a root's ceiling. */
  limits: SandboxLimits;
  harnessOutOfReach: boolean;
  /** Why this runtime gives no sandbox a network, when it does not (`SandboxRuntime.networkRefusal`). */
  networkRefusal?: string;
  /** Refuses (400 naming `field`) a model the daemon's catalogue cannot serve. */
  resolveModel(model: { provider: string; id: string }, field: string): void;
}

/**
 * POST /runs, before anything of the run exists: the root's grants, budgets, spend caps, model
 * and approval policy, each checked. Everything a request can be refused for is refused here, so
 * a refused run leaves nothing behind (no run in the list, no ledger key, no sandbox).
 */
export function planRoot(runId: string, request: CreateRunRequest, deps: RootPlanDeps): RootPlan {
  // The request's budget overrides the spec's for the root (spec §2.5).
  const budget: Budget = {
    spawnDepth: request.budget?.spawnDepth ?? request.spec.spawnDepth ?? DEFAULT_SPAWN_DEPTH,
    maxAgents: request.budget?.maxAgents ?? request.spec.maxAgents ?? DEFAULT_MAX_AGENTS,
  };
  const grants = rootGrants(request.spec, deps.limits, "body.spec");
  // A child is networked only when its root is: refusing the root refuses them all.
  if (grants.network && deps.networkRefusal !== undefined)
    throw new SwarmError("INVALID_BODY", `body.spec.network: ${deps.networkRefusal}`);
  const spend = rootSpendCaps(request.spec, request.budget);
  if (request.spec.model) deps.resolveModel(request.spec.model, "body.spec.model");
  const policy = approvalPolicy(null, request.spec, "body.spec", deps.harnessOutOfReach);
  const meta: AgentMeta = {
    runId,
    sandboxId: randomUUID(),
    spec: request.spec,
    grants,
    budget,
    spend,
    keepAlive: request.keepAlive ?? false,
    ...policy,
  };
  return { rootAgentId: newAgentId(), meta, specName: request.spec.name, prompt: request.prompt };
}

/**
 * The agent's approval policy and timeout: its parent's rules and its own; its own timeout, else its
 * parent's. Rules the harness enforces are refused where the runtime cannot keep the harness out of
 * the agent's reach: a gate the agent could remove would be no gate (fail closed).
 */
function approvalPolicy(
  parent: Pick<AgentMeta, "approve" | "approveTimeoutMs"> | null,
  spec: AgentSpec,
  root: string,
  harnessOutOfReach: boolean,
): Pick<AgentMeta, "approve" | "approveTimeoutMs"> {
  const combined = combinePolicies(parent?.approve ?? [], spec.approve ?? []);
  if ("problem" in combined) throw new SwarmError("INVALID_BODY", `${root}.approve: ${combined.problem}`);
  if (!harnessOutOfReach && combined.rules.some(heldByHarness)) {
    throw new SwarmError(
      "INVALID_BODY",
      `${root}.approve: rules for bash, read, write, edit or "*" are enforced by the harness, which these sandboxes cannot keep out of the agent's reach (the process runtime runs agents as the daemon's user unless the daemon runs as root with bubblewrap); only spawn_agent and await_result can be gated here`,
    );
  }
  const approveTimeoutMs = spec.approveTimeoutMs ?? parent?.approveTimeoutMs;
  return { approve: combined.rules, ...(approveTimeoutMs !== undefined ? { approveTimeoutMs } : {}) };
}
