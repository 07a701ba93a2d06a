import type { EndReason, PausedBy } from "../../machines/agent.types.ts";
import type { ControlMember, MemberAnswer } from "../../machines/run.machine.ts";
import { SwarmError } from "../../src/errors.ts";
import type { ControlResponse, Delivery, MemberResult, Scope } from "../../src/swarm-api.ts";
import type { AgentTable } from "./agent-table.ts";
import type { Supervisor } from "./supervisor.ts";

/** What the controls need of the run. */
export interface ControlDeps {
  supervisor: Pick<
    Supervisor,
    "carryOut" | "requireLive" | "requireNotDraining" | "status" | "isLive" | "hasPendingPause"
  >;
  tree: Pick<AgentTable, "byDepth">;
  /** Resolves once every ledger write made so far is committed (or failed and logged). */
  flushed(): Promise<unknown>;
  /** Release whatever is left of an ended agent's sandbox. */
  releaseSandbox(agentId: string): Promise<void>;
  /** The one message a subtree steer delivers to the named agent. */
  subtreeSteer(agentId: string, text: string): string;
}

const strip = (results: MemberAnswer[]): MemberResult[] =>
  results.map(({ agentId, outcome, error }) => ({ agentId, outcome, ...(error ? { error } : {}) }));

/**
 * Pause, resume, stop and steer (spec §4.8 to §4.11): who the members are and in which order (one
 * wave per depth), then the run machine carries the request out wave by wave, and the answer waits
 * for the ledger writes it caused, so it and a following snapshot agree.
 */
export class Controls {
  constructor(private readonly deps: ControlDeps) {}

  async pause(agentId: string, scope: Scope): Promise<ControlResponse> {
    this.deps.supervisor.requireLive(agentId);
    const results = await this.#carryOut("pause", this.#members(agentId, scope, "parentsFirst"));
    const own = results.find((r) => r.agentId === agentId);
    if (scope === "agent" && own?.outcome === "failed")
      throw new SwarmError("SANDBOX_FREEZE_FAILED", `the sandbox could not be paused: ${own.error ?? "unknown error"}`);
    return { results: strip(results) };
  }

  async resume(agentId: string, scope: Scope): Promise<ControlResponse> {
    const { supervisor } = this.deps;
    const status = supervisor.requireLive(agentId);
    const held = (id: string) => supervisor.status(id) === "paused" || supervisor.hasPendingPause(id);
    if (status !== "paused" && !supervisor.hasPendingPause(agentId))
      throw new SwarmError("AGENT_NOT_PAUSED", `agent ${agentId} is not paused`);
    // Only paused members are resumed; the rest of the subtree is not affected.
    const paused = this.#members(agentId, scope, "leavesFirst").map((wave) =>
      wave.filter((m) => m.agentId === agentId || held(m.agentId)),
    );
    const results = await this.#carryOut("resume", paused);
    const own = results.find((r) => r.agentId === agentId);
    if (scope === "agent" && own?.outcome === "failed")
      throw new SwarmError("SANDBOX_THAW_FAILED", `the sandbox could not be resumed: ${own.error ?? "unknown error"}`);
    return { results: strip(results) };
  }

  /** A spend cap ran out at `agentId`: its subtree is paused, parents first, it `budget` and the rest `cascade`. */
  async pauseForBudget(agentId: string): Promise<void> {
    const members = this.#members(agentId, "subtree", "parentsFirst").map((wave) =>
      wave.map((m) => (m.agentId === agentId ? { ...m, by: "budget" as const } : m)),
    );
    await this.#carryOut("pause", members);
  }

  /** Stop leaves first; an agent that had already ended keeps its outcome and its sandbox is released. */
  async stop(agentId: string, scope: Scope): Promise<ControlResponse> {
    const results = await this.#carryOut("stop", this.#members(agentId, scope, "leavesFirst"));
    await this.releaseEnded(results);
    return { results: strip(results) };
  }

  /** Abort those of `ids` still live, leaves first under `rootId` (DELETE /runs/:runId, a drain's deadline). */
  async stopLive(rootId: string, ids: ReadonlySet<string> | null, reason?: EndReason): Promise<string[]> {
    const waves = this.deps.tree
      .byDepth(rootId)
      .reverse()
      .map((level) => level.filter((id) => (ids === null || ids.has(id)) && this.deps.supervisor.isLive(id)));
    await this.#carryOut(
      "stop",
      waves.map((wave) => wave.map((id) => ({ agentId: id, by: "operator" as const }))),
      undefined,
      reason,
    );
    return waves.flat();
  }

  /** Members a stop (or drain) found ended (`noop`): whatever is left of their sandboxes is released. */
  async releaseEnded(results: readonly MemberResult[]): Promise<void> {
    for (const r of results) if (r.outcome === "noop") await this.deps.releaseSandbox(r.agentId);
  }

  async steer(agentId: string, message: string, scope: Scope): Promise<ControlResponse & { delivery: Delivery }> {
    this.deps.supervisor.requireLive(agentId);
    this.deps.supervisor.requireNotDraining(agentId);
    const text = scope === "subtree" ? this.deps.subtreeSteer(agentId, message) : message;
    const results = await this.#carryOut("steer", [[{ agentId, by: "operator" }]], text);
    const own = results[0];
    if (!own || own.outcome === "failed")
      throw new SwarmError("HARNESS_REJECTED", `the harness did not accept the message: ${own?.error ?? "no answer"}`);
    if (own.outcome === "noop") throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
    return { results: strip(results), delivery: own.delivery ?? "steer" };
  }

  async #carryOut(
    op: "pause" | "resume" | "stop" | "steer",
    waves: ControlMember[][],
    message?: string,
    reason?: EndReason,
  ): Promise<MemberAnswer[]> {
    const results = await this.deps.supervisor.carryOut(op, waves, message, reason);
    await this.deps.flushed();
    return results;
  }

  /**
   * Live members of the subtree under `agentId`, one wave per depth in the order the operation
   * needs (parents first or leaves first); the named agent is `operator`.
   */
  #members(agentId: string, scope: Scope, order: "parentsFirst" | "leavesFirst"): ControlMember[][] {
    if (scope === "agent") return [[{ agentId, by: "operator" }]];
    const levels = this.deps.tree.byDepth(agentId);
    if (order === "leavesFirst") levels.reverse();
    return levels.map((level) =>
      level
        .filter((id) => id === agentId || this.deps.supervisor.isLive(id))
        .map((id) => ({ agentId: id, by: (id === agentId ? "operator" : "cascade") as PausedBy })),
    );
  }
}
