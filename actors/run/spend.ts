import { once } from "node:events";
import { ancestorsOf } from "../../machines/tree.ts";
import { SwarmError } from "../../src/errors.ts";
import { agentKey } from "../../src/ledger/ledger-keys.ts";
import { type CapChange, isLive, type SpendCaps, type SpendView } from "../../src/swarm-api.ts";
import { totalTokens } from "../../src/views/run-view.ts";
import { pauseForBudget } from "./controls.ts";
import type { Run } from "./run.ts";

/**
 * Spend budgets of a tree (docs/design.md "Spend budgets"). An agent's caps (`maxTokens`,
 * `maxCostUsd`) bound what its whole subtree spends; every call of a descendant counts against
 * every ancestor. Counts are known only once a call ended, so a cap is enforced before each call:
 * a call is held while the caller or an ancestor has nothing left.
 */

/** What is left under one agent's own caps: its cap less its subtree's spending; `null` where it has no cap. */
function leftOf(run: Run, agentId: string): { tokens: number | null; costUsd: number | null } {
  const caps = run.agents.get(agentId)?.meta.spend ?? {};
  const spent = run.view.agents.get(agentId)?.subtreeUsage;
  const tokens = caps.maxTokens === undefined ? null : caps.maxTokens - (spent ? totalTokens(spent) : 0);
  const costUsd = caps.maxCostUsd === undefined ? null : caps.maxCostUsd - (spent?.costUsd ?? 0);
  return { tokens, costUsd };
}

const lower = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/** What the agent may still spend: the least left under its own caps and every ancestor's. */
export function lineageLeft(run: Run, agentId: string): { tokens: number | null; costUsd: number | null } {
  let left = { tokens: null as number | null, costUsd: null as number | null };
  for (const id of [agentId, ...ancestorsOf(agentId, run.agents.parents())]) {
    const own = leftOf(run, id);
    left = { tokens: lower(left.tokens, own.tokens), costUsd: lower(left.costUsd, own.costUsd) };
  }
  return left;
}

/** A new child's caps: what its spec and the request ask, each at most what its parent has left. */
export function childSpendCaps(run: Run, parentAgentId: string, asks: Array<SpendCaps | undefined>): SpendCaps {
  const left = lineageLeft(run, parentAgentId);
  let tokens = left.tokens === null ? null : Math.max(0, left.tokens);
  let costUsd = left.costUsd === null ? null : Math.max(0, left.costUsd);
  for (const ask of asks) {
    tokens = lower(tokens, ask?.maxTokens ?? null);
    costUsd = lower(costUsd, ask?.maxCostUsd ?? null);
  }
  return { ...(tokens !== null ? { maxTokens: tokens } : {}), ...(costUsd !== null ? { maxCostUsd: costUsd } : {}) };
}

export function spendView(run: Run, agentId: string): SpendView {
  const caps = run.agents.get(agentId)?.meta.spend ?? {};
  const left = lineageLeft(run, agentId);
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
export async function setSpendCaps(
  run: Run,
  agentId: string,
  caps: CapChange,
): Promise<{ agentId: string; budget: SpendView }> {
  const entry = run.agents.get(agentId);
  if (!entry) throw new SwarmError("AGENT_NOT_FOUND", `agent ${agentId} does not exist`);
  const spent = run.view.agents.get(agentId)?.subtreeUsage;
  if (entry.parentAgentId !== null) {
    const parentLeft = lineageLeft(run, entry.parentAgentId);
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
  entry.meta = { ...entry.meta, spend };
  await run.writer.append(
    [
      {
        type: "budget_changed",
        agentId,
        data: { maxTokens: spend.maxTokens ?? null, maxCostUsd: spend.maxCostUsd ?? null },
      },
    ],
    [{ key: agentKey(agentId), value: JSON.stringify(entry.meta) }],
  );
  return { agentId, budget: spendView(run, agentId) };
}

/** The first of the agent and its ancestors with nothing left of a cap, and of which. */
function exhausted(
  run: Run,
  agentId: string,
): { holder: string; dimension: "maxTokens" | "maxCostUsd"; remaining: number } | null {
  for (const id of [agentId, ...ancestorsOf(agentId, run.agents.parents())]) {
    const left = leftOf(run, id);
    if (left.tokens !== null && left.tokens <= 0)
      return { holder: id, dimension: "maxTokens", remaining: Math.max(0, left.tokens) };
    if (left.costUsd !== null && left.costUsd <= 0)
      return { holder: id, dimension: "maxCostUsd", remaining: Math.max(0, left.costUsd) };
  }
  return null;
}

/**
 * Resolves when the agent's next model call may go: nothing in its lineage is out of budget and
 * the agent is not paused. When agent X (the caller or an ancestor) has nothing left and is
 * running, `budget_denied` is recorded on X and X's subtree is paused (X `budget`, the members below
 * `cascade`); the call waits for a raise and a resume. A resume without a raise pauses again.
 */
export async function admitCall(run: Run, agentId: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    const block = exhausted(run, agentId);
    if (!block && run.status(agentId) !== "paused") return;
    // The subtree to pause is the holder's; an ancestor that has ended cannot be paused: then the caller's.
    const holderStatus = block ? run.status(block.holder) : null;
    const target = block && (holderStatus === null || !isLive(holderStatus)) ? agentId : block?.holder;
    if (block && target && run.status(target) === "running" && !run.budgetPausing.has(target)) {
      run.budgetPausing.add(target);
      try {
        await run.writer.append([
          {
            type: "budget_denied",
            agentId: block.holder,
            data: { dimension: block.dimension, remaining: block.remaining },
          },
        ]);
        await pauseForBudget(run, target);
      } finally {
        run.budgetPausing.delete(target);
      }
      continue;
    }
    await once(run.changes, "change", { signal });
  }
}
