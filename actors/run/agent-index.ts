import type { Budget } from "../../machines/budget.ts";
import { ancestorsOf, type ParentMap } from "../../machines/tree.ts";
import { SwarmError } from "../../src/errors.ts";
import type { AgentSpec } from "../../src/spec/agent-spec.ts";
import type { ApproveRule } from "../../src/spec/approve.ts";
import type { Grants } from "../../src/spec/grants.ts";
import type { SpendCaps } from "../../src/swarm-api.ts";

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
}

/** One agent of the run as the service tracks it: its meta and its place in the tree. */
export interface AgentEntry {
  meta: AgentMeta;
  parentAgentId: string | null;
  depth: number;
  waitFor: string[];
}

type SandboxSignal =
  | { state: "waiting"; waiters: Array<() => void> }
  | { state: "ready"; sandboxId: string }
  | { state: "gone" };

/**
 * The run's agents as the service needs them to decide: metas, the tree, spawn counts for budgets
 * and when each sandbox exists. Agents' live state is not here: it is their machines' (tags).
 */
export class AgentIndex {
  readonly #entries = new Map<string, AgentEntry>();
  /** agentId → parentAgentId, kept as agents are added (what the tree order and budgets walk). */
  readonly #parents: Record<string, string | null> = {};
  readonly #childCounts = new Map<string, number>();
  /** Accepted spawns under each agent (all descendants, ended ones included): what `maxAgents` counts. */
  readonly #descendants: Record<string, number> = {};
  readonly #sandboxes = new Map<string, SandboxSignal>();

  add(agentId: string, entry: AgentEntry): void {
    this.#entries.set(agentId, entry);
    this.#parents[agentId] = entry.parentAgentId;
    if (entry.parentAgentId !== null)
      this.#childCounts.set(entry.parentAgentId, this.childCount(entry.parentAgentId) + 1);
    this.#sandboxes.set(agentId, { state: "waiting", waiters: [] });
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

  budgetOf(agentId: string): Budget | undefined {
    return this.#entries.get(agentId)?.meta.budget;
  }

  descendants(): Readonly<Record<string, number>> {
    return this.#descendants;
  }

  /** An accepted spawn under `parentId` counts against it and every ancestor. */
  countSpawn(parentId: string): void {
    for (const id of [parentId, ...ancestorsOf(parentId, this.parents())])
      this.#descendants[id] = (this.#descendants[id] ?? 0) + 1;
  }

  /** The agent's sandbox exists (provisioned, or found live at restart): children may fork it. */
  sandboxReady(agentId: string, sandboxId: string): void {
    const signal = this.#sandboxes.get(agentId);
    this.#sandboxes.set(agentId, { state: "ready", sandboxId });
    if (signal?.state === "waiting") for (const wake of signal.waiters) wake();
  }

  /** The agent ended: nothing forks its sandbox any more. */
  sandboxGone(agentId: string): void {
    const signal = this.#sandboxes.get(agentId);
    this.#sandboxes.set(agentId, { state: "gone" });
    if (signal?.state === "waiting") for (const wake of signal.waiters) wake();
  }

  /**
   * The sandbox id of `agentId` once it exists: a child spawned while its parent is still
   * provisioning forks when the parent's `provisioned` fact arrives. Rejects when the parent ends
   * first or `signal` aborts.
   */
  async whenSandboxReady(agentId: string, signal: AbortSignal): Promise<string> {
    for (;;) {
      signal.throwIfAborted();
      const current = this.#sandboxes.get(agentId);
      if (current?.state === "ready") return current.sandboxId;
      if (!current || current.state === "gone") throw new Error(`parent ${agentId} ended before the fork`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          resolve();
        };
        current.waiters.push(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
  }
}
