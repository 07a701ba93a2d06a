import { randomUUID } from "node:crypto";
import { errorMessage, isSwarmError, SwarmError } from "../../src/errors.ts";
import { planAdopt } from "../../src/forks/adopt-plan.ts";
import { describeChanges } from "../../src/forks/file-diffs.ts";
import { compareTrees } from "../../src/forks/tree-compare.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { TreeRef, WorkTree } from "../../src/sandbox/work-tree.ts";
import type { AgentSpec } from "../../src/spec/agent-spec.ts";
import type {
  AdoptRequest,
  AdoptResponse,
  BudgetOverride,
  ChangesView,
  ForkPoint,
  ForkRequest,
  ForkResponse,
  ForkSpec,
} from "../../src/swarm-api.ts";
import type { AgentTable } from "./agent-table.ts";
import type { Spawner } from "./spawn.ts";
import type { Supervisor } from "./supervisor.ts";

/** What forking, comparing and adopting need of the run. */
export interface ForkDeps {
  runId: string;
  table: Pick<AgentTable, "get" | "require">;
  supervisor: Pick<Supervisor, "requireLive" | "requireNotDraining" | "requireBetweenTurns">;
  spawner: Pick<Spawner, "check" | "fork" | "earlier">;
  runtime: Pick<SandboxRuntime, "snapshot" | "openTree" | "applyChanges">;
  /** Turns the agent settled so far (the ledger's `handle_settled`). */
  settledTurns(agentId: string): number;
  /** Whether the agent belongs to this run. */
  recorded(agentId: string): boolean;
  append(events: RunEventInput[]): Promise<unknown>;
}

/** An agent's own `spawn_agent` with `fork: true`. */
export interface ForkFromInside {
  prompts: string[];
  spec?: ForkSpec;
  budget?: BudgetOverride;
  /** The call's id (the fork point), and its host call's (a call sent again gets the same children). */
  toolCallId: string;
  callId: string;
}

/**
 * Forks of an agent, conversation and all (spec §4.23 to §4.26): `fork` (over HTTP, of an agent
 * between turns) and `forkFromInside` (an agent's own `spawn_agent` with `fork: true`, mid-turn)
 * take one fork point through the runtime (its /work and conversation, frozen) and record its
 * children through the spawner, one batch; `changes` compares a fork child's /work with its fork
 * point; `adopt` applies a child's changes onto its parent's /work.
 *
 * While a fork point of an agent between turns is taken, or a child's changes are written into it,
 * its prompts and steers wait (`whenOpen`): a turn starting meanwhile would put its prompt into the
 * copy, or its writes under the adopted files.
 */
export class Forks {
  /** Agents a fork or an adopt holds between turns, and what their prompts wait on. */
  readonly #held = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ForkDeps) {}

  /** Resolves once no fork or adopt holds the agent (at once when none does). */
  async whenOpen(agentId: string): Promise<void> {
    for (let held = this.#held.get(agentId); held; held = this.#held.get(agentId)) await held.catch(() => undefined);
  }

  /** POST /agents/:agentId/fork. */
  async fork(agentId: string, request: ForkRequest): Promise<ForkResponse> {
    const { deps } = this;
    const prompts = request.prompts ?? Array.from({ length: request.count ?? 0 }, () => request.prompt ?? "");
    deps.supervisor.requireLive(agentId);
    deps.supervisor.requireNotDraining(agentId, "starts no new children");
    deps.supervisor.requireBetweenTurns(
      agentId,
      "an agent is forked",
      ", or let it fork itself from inside its turn (spawn_agent with fork: true)",
    );
    const spec = forkSpec(deps.table.require(agentId).meta.spec, request.spec);
    // Everything a fork can be refused for, refused before anything is made.
    const checked = deps.spawner.check(agentId, spec, "body.spec");
    return this.#holding(agentId, async () => {
      const baseId = await this.#snapshot(agentId, prompts.length);
      const forkPoint: ForkPoint = { turn: deps.settledTurns(agentId) };
      const agentIds = await deps.spawner.fork(checked, {
        spec,
        prompts,
        budget: request.budget,
        keepAlive: request.keepAlive,
        baseId,
        forkPoint,
        byAgent: false,
      });
      return { agentIds };
    });
  }

  /** An agent's own `spawn_agent` with `fork: true`: copies of it from this very call. */
  async forkFromInside(agentId: string, call: ForkFromInside): Promise<ForkResponse> {
    const { deps } = this;
    const idempotency = `host:${call.callId}`;
    const earlier = await deps.spawner.earlier(idempotency);
    if (earlier !== undefined) return earlier as ForkResponse;
    const spec = forkSpec(deps.table.require(agentId).meta.spec, call.spec);
    const checked = deps.spawner.check(agentId, spec, "params.spec");
    const baseId = await this.#snapshot(agentId, call.prompts.length);
    const agentIds = await deps.spawner.fork(checked, {
      spec,
      prompts: call.prompts,
      budget: call.budget,
      keepAlive: false,
      baseId,
      forkPoint: { turn: deps.settledTurns(agentId) + 1, toolCallId: call.toolCallId },
      byAgent: true,
      idempotency,
    });
    return { agentIds };
  }

  /** GET /agents/:agentId/changes. */
  async changes(agentId: string): Promise<ChangesView> {
    const fork = this.#forkOf(agentId);
    const signal = AbortSignal.timeout(120_000);
    const view = await this.#withTrees(
      [{ baseId: fork.baseId }, { sandboxId: fork.sandboxId }],
      async ([base, tree]) => {
        if (!tree) return { files: [], diffBytes: 0 };
        const changes = await compareTrees(base!, tree, signal);
        return describeChanges(changes, base!, tree, signal);
      },
    );
    return { agentId, forkedFrom: { agentId: fork.forkedFrom, forkPoint: fork.forkPoint }, ...view };
  }

  /** POST /agents/:agentId/adopt. */
  async adopt(agentId: string, request: AdoptRequest): Promise<AdoptResponse> {
    const { deps } = this;
    const from = request.from;
    const child = deps.recorded(from) ? deps.table.get(from) : undefined;
    if (!child || child.parentAgentId !== agentId || !child.meta.fork)
      throw new SwarmError(
        "INVALID_BODY",
        `body.from: ${from} is not ${child ? "a fork child of" : "an agent of this run, nor a fork child of"} ${agentId}`,
      );
    deps.supervisor.requireLive(agentId);
    deps.supervisor.requireBetweenTurns(agentId, "an agent adopts changes", "");
    const ours = deps.table.require(agentId).meta.sandboxId;
    const fork = child.meta.fork;
    return this.#holding(agentId, async () => {
      const signal = AbortSignal.timeout(300_000);
      const plan = await this.#withTrees(
        [{ baseId: fork.baseId }, { sandboxId: child.meta.sandboxId }, { sandboxId: ours }],
        async ([base, theirs, mine]) => {
          if (!mine) throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} has no sandbox`);
          if (!theirs) return undefined; // a child that never had a sandbox changed nothing
          const changes = await compareTrees(base!, theirs, signal);
          return planAdopt(changes, { base: base!, theirs, ours: mine }, signal);
        },
      );
      if (!plan) return { agentId, from, files: [], skipped: [] };
      if (plan.conflicts.length > 0 && request.onConflict === "fail") throw conflict(agentId, from, plan.conflicts);
      if (plan.writes.length > 0) await deps.runtime.applyChanges(ours, plan.writes, signal);
      await deps.append([{ type: "changes_adopted", agentId, data: { from, files: plan.files } }]);
      return { agentId, from, files: plan.files, skipped: plan.skipped };
    });
  }

  /** The fork point of a fork child, with its sandbox; `NOT_A_FORK` for any other agent. */
  #forkOf(agentId: string) {
    const meta = this.deps.table.get(agentId)?.meta;
    if (!meta?.fork)
      throw new SwarmError("NOT_A_FORK", `agent ${agentId} was not made by a fork: it has no fork point`);
    return { ...meta.fork, sandboxId: meta.sandboxId };
  }

  /** The agent's fork point now: its /work and conversation, frozen. */
  async #snapshot(agentId: string, copies: number): Promise<string> {
    const baseId = randomUUID();
    const { sandboxId } = this.deps.table.require(agentId).meta;
    try {
      await this.deps.runtime.snapshot(sandboxId, baseId, this.deps.runId, AbortSignal.timeout(300_000), copies);
    } catch (err) {
      if (isSwarmError(err)) throw err;
      throw new SwarmError("SNAPSHOT_FAILED", `agent ${agentId}: ${errorMessage(err)}`, { cause: err });
    }
    return baseId;
  }

  /**
   * Run `work` while the agent's prompts and steers wait; a second fork or adopt of it runs after
   * this one (the holds are chained synchronously, so no two run at once).
   */
  #holding<T>(agentId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#held.get(agentId);
    const done = (before ? before.then(noop, noop) : Promise.resolve()).then(work);
    this.#held.set(agentId, done);
    return done.finally(() => {
      if (this.#held.get(agentId) === done) this.#held.delete(agentId);
    });
  }

  /** Open the trees (undefined for a sandbox tree that does not exist), run `use`, and close them all. */
  async #withTrees<T>(refs: TreeRef[], use: (trees: (WorkTree | undefined)[]) => Promise<T>): Promise<T> {
    const signal = AbortSignal.timeout(60_000);
    const trees: (WorkTree | undefined)[] = [];
    try {
      for (const ref of refs)
        trees.push(
          await this.deps.runtime.openTree(ref, signal).catch((err: unknown) => {
            if ("sandboxId" in ref && isSwarmError(err, "SANDBOX_NOT_FOUND")) return undefined;
            throw err;
          }),
        );
      return await use(trees);
    } finally {
      await Promise.all(trees.map((tree) => tree?.close().catch(() => undefined)));
    }
  }
}

const noop = () => undefined;

/** The children's spec: the forked agent's, with the fork's changes (a model or script replaces either). */
export function forkSpec(agent: AgentSpec, changes: ForkSpec | undefined): AgentSpec {
  const { model, script, approve: _own, ...rest } = agent;
  const brain = changes?.model
    ? { model: changes.model }
    : changes?.script
      ? { script: changes.script }
      : model
        ? { model }
        : { script: script ?? [] };
  // The forked agent's own rules are in its policy already, which a child's policy starts from.
  return {
    ...rest,
    ...(changes?.name !== undefined ? { name: changes.name } : {}),
    ...(changes?.limits !== undefined ? { limits: changes.limits } : {}),
    ...(changes?.maxTokens !== undefined ? { maxTokens: changes.maxTokens } : {}),
    ...(changes?.maxCostUsd !== undefined ? { maxCostUsd: changes.maxCostUsd } : {}),
    ...(changes?.approve !== undefined ? { approve: changes.approve } : {}),
    ...brain,
  };
}

function conflict(agentId: string, from: string, paths: string[]): SwarmError {
  const shown = paths.slice(0, 50).join(", ");
  const more = paths.length > 50 ? ` and ${paths.length - 50} more` : "";
  return new SwarmError(
    "ADOPT_CONFLICT",
    `${paths.length} ${paths.length === 1 ? "path was" : "paths were"} changed both by ${agentId} and by its child ${from} since the fork: ${shown}${more}; nothing was applied (adopt with onConflict "theirs" to take the child's)`,
  );
}
