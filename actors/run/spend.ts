import { SwarmError } from "../../src/errors.ts";
import type { IndexPut } from "../../src/ledger/ledger.ts";
import { agentKey } from "../../src/ledger/ledger-keys.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import { type CapChange, isLive, type SpendCaps, type SpendView, type Usage } from "../../src/swarm-api.ts";
import { totalTokens } from "../../src/views/run-view.ts";
import type { AgentTable } from "./agent-table.ts";
import type { Supervisor } from "./supervisor.ts";

/** What spend budgets need of the run. */
export interface SpendDeps {
  table: Pick<AgentTable, "get" | "require" | "ancestors" | "setSpend">;
  /** What the agent's subtree spent: the ledger view's fold of `model_usage`. */
  subtreeUsage(agentId: string): Usage | undefined;
  supervisor: Pick<Supervisor, "status">;
  append(events: RunEventInput[], put?: IndexPut[]): Promise<unknown>;
  /** Pause the agent's subtree for a spent cap (it `budget`, the rest `cascade`). */
  pauseForBudget(agentId: string): Promise<void>;
  /** Resolves at the run's next change (a state change, a model call, new caps); rejects when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<unknown>;
}

type Left = { tokens: number | null; costUsd: number | null };

const lower = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/**
 * Spend budgets of a tree (docs/design.md "Spend budgets"). An agent's caps (`maxTokens`,
 * `maxCostUsd`) bound what its whole subtree spends; every call of a descendant counts against
 * every ancestor. Counts are known only once a call ended, so a cap is enforced before each call:
 * a call is held while the caller or an ancestor has nothing left.
 */
export class Spend {
  /** Agents whose subtree is being paused for a spend cap now (one pause, however many calls are held). */
  readonly #pausing = new Set<string>();
  /** The cap change under way (`setCaps`). */
  #changing: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: SpendDeps) {}

  /** What the agent may still spend: the least left under its own caps and every ancestor's. */
  lineageLeft(agentId: string): Left {
    let left: Left = { tokens: null, costUsd: null };
    for (const id of [agentId, ...this.deps.table.ancestors(agentId)]) {
      const own = this.#leftOf(id);
      left = { tokens: lower(left.tokens, own.tokens), costUsd: lower(left.costUsd, own.costUsd) };
    }
    return left;
  }

  /** A new child's caps: what its spec and the request ask, each at most what its parent has left. */
  childCaps(parentAgentId: string, asks: Array<SpendCaps | undefined>): SpendCaps {
    const left = this.lineageLeft(parentAgentId);
    let tokens = left.tokens === null ? null : Math.max(0, left.tokens);
    let costUsd = left.costUsd === null ? null : Math.max(0, left.costUsd);
    for (const ask of asks) {
      tokens = lower(tokens, ask?.maxTokens ?? null);
      costUsd = lower(costUsd, ask?.maxCostUsd ?? null);
    }
    return { ...(tokens !== null ? { maxTokens: tokens } : {}), ...(costUsd !== null ? { maxCostUsd: costUsd } : {}) };
  }

  view(agentId: string): SpendView {
    const caps = this.deps.table.get(agentId)?.meta.spend ?? {};
    const left = this.lineageLeft(agentId);
    return {
      maxTokens: caps.maxTokens ?? null,
      maxCostUsd: caps.maxCostUsd ?? null,
      remainingTokens: left.tokens === null ? null : Math.max(0, left.tokens),
      remainingCostUsd: left.costUsd === null ? null : Math.max(0, left.costUsd),
    };
  }

  /**
   * `POST /agents/:agentId/budget`: new absolute caps. What a cap leaves the agent (the cap less its
   * subtree's spending) may not exceed what its parent has left (409). It resumes nothing: a call
   * held for the budget goes once the subtree is resumed.
   */
  setCaps(agentId: string, caps: CapChange): Promise<{ agentId: string; budget: SpendView }> {
    // One change at a time: each is checked and computed from the caps the one before recorded.
    const change = this.#changing.then(() => this.#setCaps(agentId, caps));
    this.#changing = change.catch(() => undefined);
    return change;
  }

  async #setCaps(agentId: string, caps: CapChange): Promise<{ agentId: string; budget: SpendView }> {
    const entry = this.deps.table.get(agentId);
    if (!entry) throw new SwarmError("AGENT_NOT_FOUND", `agent ${agentId} does not exist`);
    const spent = this.deps.subtreeUsage(agentId);
    if (entry.parentAgentId !== null) {
      const parentLeft = this.lineageLeft(entry.parentAgentId);
      if (
        typeof caps.maxTokens === "number" &&
        parentLeft.tokens !== null &&
        caps.maxTokens - (spent ? totalTokens(spent) : 0) > parentLeft.tokens
      ) {
        throw new SwarmError(
          "BUDGET_EXCEEDS_PARENT",
          `body.maxTokens: ${caps.maxTokens} would leave agent ${agentId} more tokens than its parent has left (${Math.max(0, parentLeft.tokens)})`,
        );
      }
      if (
        typeof caps.maxCostUsd === "number" &&
        parentLeft.costUsd !== null &&
        caps.maxCostUsd - (spent?.costUsd ?? 0) > parentLeft.costUsd
      ) {
        throw new SwarmError(
          "BUDGET_EXCEEDS_PARENT",
          `body.maxCostUsd: ${caps.maxCostUsd} would leave agent ${agentId} more than its parent has left ($${Math.max(0, parentLeft.costUsd).toFixed(6)})`,
        );
      }
    }
    const spend: SpendCaps = { ...entry.meta.spend };
    for (const dimension of ["maxTokens", "maxCostUsd"] as const) {
      const change = caps[dimension];
      if (change === null) delete spend[dimension];
      else if (change !== undefined) spend[dimension] = change;
    }
    // The table takes the caps once the ledger has them: a write refused (disk full) changes nothing.
    await this.deps.append(
      [
        {
          type: "budget_changed",
          agentId,
          data: { maxTokens: spend.maxTokens ?? null, maxCostUsd: spend.maxCostUsd ?? null },
        },
      ],
      [{ key: agentKey(agentId), value: JSON.stringify({ ...entry.meta, spend }) }],
    );
    this.deps.table.setSpend(agentId, spend);
    return { agentId, budget: this.view(agentId) };
  }

  /**
   * Resolves when the agent's next model call may go: nothing in its lineage is out of budget and
   * the agent is not paused. When agent X (the caller or an ancestor) has nothing left and is
   * running, `budget_denied` is recorded on X and X's subtree is paused (X `budget`, the members
   * below `cascade`); the call waits for a raise and a resume. A resume without a raise pauses again.
   */
  async admit(agentId: string, signal: AbortSignal): Promise<void> {
    const { supervisor } = this.deps;
    for (;;) {
      signal.throwIfAborted();
      const block = this.#exhausted(agentId);
      if (!block && supervisor.status(agentId) !== "paused") return;
      // The subtree to pause is the holder's; an ancestor that has ended cannot be paused: then the caller's.
      const holderStatus = block ? supervisor.status(block.holder) : null;
      const target = block && (holderStatus === null || !isLive(holderStatus)) ? agentId : block?.holder;
      if (block && target && supervisor.status(target) === "running" && !this.#pausing.has(target)) {
        this.#pausing.add(target);
        try {
          await this.deps.append([
            {
              type: "budget_denied",
              agentId: block.holder,
              data: { dimension: block.dimension, remaining: block.remaining },
            },
          ]);
          await this.deps.pauseForBudget(target);
        } finally {
          this.#pausing.delete(target);
        }
        continue;
      }
      await this.deps.nextChange(signal);
    }
  }

  /** What is left under one agent's own caps: its cap less its subtree's spending; `null` where it has no cap. */
  #leftOf(agentId: string): Left {
    const caps = this.deps.table.get(agentId)?.meta.spend ?? {};
    const spent = this.deps.subtreeUsage(agentId);
    const tokens = caps.maxTokens === undefined ? null : caps.maxTokens - (spent ? totalTokens(spent) : 0);
    const costUsd = caps.maxCostUsd === undefined ? null : caps.maxCostUsd - (spent?.costUsd ?? 0);
    return { tokens, costUsd };
  }

  /** The first of the agent and its ancestors with nothing left of a cap, and of which. */
  #exhausted(agentId: string): { holder: string; dimension: "maxTokens" | "maxCostUsd"; remaining: number } | null {
    for (const id of [agentId, ...this.deps.table.ancestors(agentId)]) {
      const left = this.#leftOf(id);
      if (left.tokens !== null && left.tokens <= 0)
        return { holder: id, dimension: "maxTokens", remaining: Math.max(0, left.tokens) };
      if (left.costUsd !== null && left.costUsd <= 0)
        return { holder: id, dimension: "maxCostUsd", remaining: Math.max(0, left.costUsd) };
    }
    return null;
  }
}
