import type { Budget } from "../../machines/budget.ts";
import { ancestorsOf, byDepth, type ParentMap, parentsFirst } from "../../machines/tree.ts";
import { SwarmError } from "../../src/errors.ts";
import type { ForkSource } from "../../src/sandbox/runtime.ts";
import type { AgentSpec } from "../../src/spec/agent-spec.ts";
import type { ApproveRule } from "../../src/spec/approve.ts";
import type { Grants } from "../../src/spec/grants.ts";
import type { ForkPoint, SpendCaps } from "../../src/swarm-api.ts";

/** What swarmd keeps of an agent beyond its ledger events (stored under `agentKey`). */
export interface AgentMeta {
  runId: string;
  /** Chosen at spawn and recorded before provisioning, so a crash mid-provision can be reconciled. */
  sandboxId: string;
  spec: AgentSpec;
  /** What its sandbox was given: the spec's asks within its parent's (or the daemon's) grants. */
  grants: Grants;
  budget: Budget;
  /** Spend caps of its subtree (absent in ledgers older than the model gateway: none). */
  spend?: SpendCaps;
  keepAlive: boolean;
  /** Its approval policy: its ancestors' rules and its own (absent in older ledgers: none). */
  approve?: ApproveRule[];
  /** Its own `approveTimeoutMs`, or the nearest ancestor's. */
  approveTimeoutMs?: number;
  /** Only a fork child's: the fork point it starts from, which copy it is, and whom it was forked from. */
  fork?: ForkMeta;
}

/** Where a fork child starts (`ForkSource`), and the agent and point it was forked from. */
export interface ForkMeta extends ForkSource {
  forkedFrom: string;
  forkPoint: ForkPoint;
}

/** One agent as the run decides about it: its meta and its place in the tree. */
export interface AgentEntry {
  meta: AgentMeta;
  parentAgentId: string | null;
  depth: number;
  waitFor: string[];
}

/**
 * The run's agents as the run decides about them: each agent's meta (spec, grants, budgets, policy)
 * and the spawn tree, kept once, here (the ledger view folds the same tree from `agent_spawned` for
 * snapshots). Spawns are counted here synchronously, before their ledger write, so concurrent
 * spawns get distinct places and cannot both squeeze under a budget. An agent's live state is
 * not here: it is its machine's.
 */
export class AgentTable {
  readonly #entries = new Map<string, AgentEntry>();
  /** agentId → parentAgentId, in spawn order: what the tree walks, budgets and cascades read. */
  readonly #parents: Record<string, string | null> = {};
  readonly #childCounts = new Map<string, number>();
  /** Accepted spawns under each agent (all descendants, ended ones included): what `maxAgents` counts. */
  readonly #descendants: Record<string, number> = {};

  add(agentId: string, entry: AgentEntry): void {
    this.#entries.set(agentId, entry);
    this.#parents[agentId] = entry.parentAgentId;
    if (entry.parentAgentId !== null)
      this.#childCounts.set(entry.parentAgentId, this.childCount(entry.parentAgentId) + 1);
  }

  /**
   * Take back an `add` whose ledger write failed, and the `countSpawn` under `counted` that went
   * with it: the table is as it was before the spawn (the next child gets the same `spawnIndex`).
   */
  remove(agentId: string, counted?: string): void {
    const entry = this.#entries.get(agentId);
    if (!entry) return;
    if (counted !== undefined)
      for (const id of [counted, ...this.ancestors(counted)]) this.#descendants[id] = (this.#descendants[id] ?? 1) - 1;
    this.#entries.delete(agentId);
    delete this.#parents[agentId];
    if (entry.parentAgentId !== null)
      this.#childCounts.set(entry.parentAgentId, this.childCount(entry.parentAgentId) - 1);
  }

  has(agentId: string): boolean {
    return this.#entries.has(agentId);
  }

  get(agentId: string): AgentEntry | undefined {
    return this.#entries.get(agentId);
  }

  /** The entry, or an internal error: every agent with an actor has one. */
  require(agentId: string): AgentEntry {
    const entry = this.#entries.get(agentId);
    if (!entry) throw new SwarmError("INTERNAL", `nothing recorded for agent ${agentId}`);
    return entry;
  }

  ids(): IterableIterator<string> {
    return this.#entries.keys();
  }

  /**
   * Children recorded under `agentId` so far, refused ones included: the next child's `spawnIndex`.
   * Counted here, not from the ledger view, so spawns that race each other get distinct indexes.
   */
  childCount(agentId: string): number {
    return this.#childCounts.get(agentId) ?? 0;
  }

  parents(): ParentMap {
    return this.#parents;
  }

  /** The agent's ancestors, nearest first. */
  ancestors(agentId: string): string[] {
    return ancestorsOf(agentId, this.#parents);
  }

  /** The agent and everything under it, parents first (pause order). */
  parentsFirst(agentId: string): string[] {
    return parentsFirst(agentId, this.#parents);
  }

  /** The agent and everything under it, one list per depth, the agent's first. */
  byDepth(agentId: string): string[][] {
    return byDepth(agentId, this.#parents);
  }

  budgetOf(agentId: string): Budget | undefined {
    return this.#entries.get(agentId)?.meta.budget;
  }

  descendants(): Readonly<Record<string, number>> {
    return this.#descendants;
  }

  /** An accepted spawn under `parentId` counts against it and every ancestor. */
  countSpawn(parentId: string): void {
    for (const id of [parentId, ...this.ancestors(parentId)]) this.#descendants[id] = (this.#descendants[id] ?? 0) + 1;
  }

  /** New spend caps of the agent's subtree, as the ledger recorded them. */
  setSpend(agentId: string, spend: SpendCaps): void {
    const entry = this.require(agentId);
    entry.meta = { ...entry.meta, spend };
  }
}
