import type { Drain } from "../../machines/agent.types.ts";
import { leavesFirst, parentsFirst } from "../../machines/tree.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { ControlResponse, MemberResult, Scope } from "../../src/swarm-api.ts";
import { carryOut, isLiveIn, releaseEnded } from "./controls.ts";
import type { Run } from "./run.ts";

/**
 * `POST /agents/:agentId/stop` with `mode: "drain"`: every live member is marked draining, parents
 * first, so from the first mark nothing under a draining agent is spawned, prompted or steered
 * (409 `AGENT_DRAINING`). Each member then ends by itself: `done` once the turns it had accepted
 * settled (and, in a subtree drain, its children ended, so the members end leaves first), with
 * `agent_ended.reason: "drained"`; one not started yet ends at once. What is still live at the
 * deadline is aborted, leaves first (`reason: "drain-timeout"`). The answer comes once the marks
 * are recorded: the members' results say who was marked (`applied`) and who had ended (`noop`).
 */
export async function drain(run: Run, agentId: string, scope: Scope, timeoutMs: number): Promise<ControlResponse> {
  const ids = scope === "agent" ? [agentId] : parentsFirst(agentId, run.agents.parents());
  const mark: Drain = { subtree: scope === "subtree", deadline: Date.now() + timeoutMs };
  const { told, recorded } = markDraining(run, ids, mark);
  // The marks are durable before the answer: a restart keeps the drain and its deadline.
  await recorded;
  const marked = new Set(told);
  const results: MemberResult[] = ids
    .filter((id) => id === agentId || marked.has(id) || isLiveIn(run, id))
    .map((id) => ({ agentId: id, outcome: marked.has(id) ? "applied" : "noop" }));
  await releaseEnded(run, results);
  await run.writer.flushed();
  return { results };
}

/**
 * Mark the live agents among `ids` (in that order) draining, record it (`agent_draining`, so a
 * restart keeps it) and arm the deadline. Machines are told first, in one tick: a spawn, prompt or
 * steer that comes after this call finds them draining. `told`: the agents the drain reached;
 * `recorded`: the write of the marks of those still live (one not yet started has ended on the
 * spot, its end saying `drained`), which rejects when the ledger refuses it.
 */
export function markDraining(
  run: Run,
  ids: readonly string[],
  mark: Drain,
): { told: string[]; recorded: Promise<unknown> } {
  const told: string[] = [];
  for (const id of ids) {
    const child = run.actor.getSnapshot().children[id];
    if (!child || !isLiveIn(run, id)) continue;
    child.send({ type: "drain", drain: mark });
    told.push(id);
  }
  const draining = told.filter((id) => isLiveIn(run, id));
  if (draining.length === 0) return { told, recorded: Promise.resolve() };
  const events: RunEventInput[] = draining.map((id) => ({
    type: "agent_draining",
    agentId: id,
    data: { subtree: mark.subtree, deadline: mark.deadline },
  }));
  const recorded = run.writer.append(events);
  armDeadline(run, draining, mark.deadline);
  return { told, recorded };
}

/** At `deadline`, abort those of `ids` still live, leaves first. */
export function armDeadline(run: Run, ids: readonly string[], deadline: number): void {
  run.timer(() => {
    const waiting = new Set(ids);
    const late = leavesFirst(run.view.rootAgentId, run.agents.parents()).filter(
      (id) => waiting.has(id) && isLiveIn(run, id),
    );
    if (late.length === 0) return;
    run.deps.log(`run ${run.runId}: ${late.length} draining agent(s) still live at the drain deadline: aborting them`);
    void carryOut(
      run,
      "stop",
      late.map((id) => ({ agentId: id, by: "operator" as const })),
      undefined,
      "drain-timeout",
    );
  }, deadline - Date.now());
}

/** After a restart: the deadlines of the drains the ledger shows under way, one timer per deadline. */
export function rearmDrains(run: Run): void {
  const byDeadline = new Map<number, string[]>();
  for (const record of run.view.agents.values()) {
    if (!record.drain || record.outcome !== null) continue;
    byDeadline.set(record.drain.deadline, [...(byDeadline.get(record.drain.deadline) ?? []), record.agentId]);
  }
  for (const [deadline, ids] of byDeadline) armDeadline(run, ids, deadline);
}
