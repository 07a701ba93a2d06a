import type { Drain } from "../../machines/agent.types.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { ControlResponse, MemberResult, Scope } from "../../src/swarm-api.ts";
import type { AgentTable } from "./agent-table.ts";
import type { Supervisor } from "./supervisor.ts";

/** What a drain needs of the run. */
export interface DrainDeps {
  supervisor: Pick<Supervisor, "isLive" | "send">;
  tree: Pick<AgentTable, "parentsFirst">;
  append(events: RunEventInput[]): Promise<unknown>;
  flushed(): Promise<unknown>;
  /** Release what is left of the sandboxes of members found ended. */
  releaseEnded(results: readonly MemberResult[]): Promise<void>;
  /** Abort those of `ids` still live, leaves first (`reason: "drain-timeout"`); answers how many were. */
  stopLate(ids: ReadonlySet<string>): Promise<number>;
  /** A timer the run clears when it closes. */
  timer(fire: () => void, delayMs: number): void;
  log(message: string): void;
}

/**
 * `POST /agents/:agentId/stop` with `mode: "drain"`: every live member is marked draining, parents
 * first, so from the first mark nothing under a draining agent is spawned, prompted or steered
 * (409 `AGENT_DRAINING`). Each member then ends by itself: `done` once the turns it had accepted
 * settled (and, in a subtree drain, its children ended, so the members end leaves first), with
 * `agent_ended.reason: "drained"`; one not started yet ends at once. What is still live at the
 * deadline is aborted, leaves first (`reason: "drain-timeout"`). The answer comes once the marks
 * are recorded: the members' results say who was marked (`applied`) and who had ended (`noop`).
 */
export class Drains {
  constructor(private readonly deps: DrainDeps) {}

  async drain(agentId: string, scope: Scope, timeoutMs: number): Promise<ControlResponse> {
    const ids = scope === "agent" ? [agentId] : this.deps.tree.parentsFirst(agentId);
    const mark: Drain = { subtree: scope === "subtree", deadline: Date.now() + timeoutMs };
    const { told, recorded } = this.mark(ids, mark);
    // The marks are durable before the answer: a restart keeps the drain and its deadline.
    await recorded;
    const marked = new Set(told);
    const results: MemberResult[] = ids
      .filter((id) => id === agentId || marked.has(id) || this.deps.supervisor.isLive(id))
      .map((id) => ({ agentId: id, outcome: marked.has(id) ? "applied" : "noop" }));
    await this.deps.releaseEnded(results);
    await this.deps.flushed();
    return { results };
  }

  /**
   * Mark the live agents among `ids` (in that order) draining, record it (`agent_draining`, so a
   * restart keeps it) and arm the deadline. Machines are told first, in one tick: a spawn, prompt or
   * steer that comes after this call finds them draining. `told`: the agents the drain reached;
   * `recorded`: the write of the marks of those still live (one not yet started has ended on the
   * spot, its end saying `drained`), which rejects when the ledger refuses it.
   */
  mark(ids: readonly string[], mark: Drain): { told: string[]; recorded: Promise<unknown> } {
    const { supervisor } = this.deps;
    const told: string[] = [];
    for (const id of ids) {
      if (!supervisor.isLive(id)) continue;
      supervisor.send(id, { type: "drain", drain: mark });
      told.push(id);
    }
    const draining = told.filter((id) => supervisor.isLive(id));
    if (draining.length === 0) return { told, recorded: Promise.resolve() };
    const events: RunEventInput[] = draining.map((id) => ({
      type: "agent_draining",
      agentId: id,
      data: { subtree: mark.subtree, deadline: mark.deadline },
    }));
    const recorded = this.deps.append(events);
    this.armDeadline(draining, mark.deadline);
    return { told, recorded };
  }

  /** At `deadline`, abort those of `ids` still live, leaves first. */
  armDeadline(ids: readonly string[], deadline: number): void {
    this.deps.timer(() => {
      void this.deps.stopLate(new Set(ids)).then((late) => {
        if (late > 0) this.deps.log(`${late} draining agent(s) were still live at the drain deadline: aborted`);
      });
    }, deadline - Date.now());
  }

  /** After a restart: the deadlines of the drains the ledger shows under way, one timer per deadline. */
  rearm(drains: Iterable<{ agentId: string; drain: Drain }>): void {
    const byDeadline = new Map<number, string[]>();
    for (const { agentId, drain } of drains)
      byDeadline.set(drain.deadline, [...(byDeadline.get(drain.deadline) ?? []), agentId]);
    for (const [deadline, ids] of byDeadline) this.armDeadline(ids, deadline);
  }
}
