import { randomUUID } from "node:crypto";
import type { ControlOp, EndReason, PausedBy } from "../../machines/agent.types.ts";
import type { ControlMember, MemberAnswer } from "../../machines/run.machine.ts";
import { leavesFirst, parentsFirst } from "../../machines/tree.ts";
import { SwarmError } from "../../src/errors.ts";
import { type ControlResponse, type Delivery, isLive, type MemberResult, type Scope } from "../../src/swarm-api.ts";
import type { Run } from "./run.ts";
import { subtreeSteerMessage } from "./steer-message.ts";

/**
 * Hand a control request to the run's supervisor and wait for every member's answer (the
 * supervisor records a member that does not answer in time as `failed`), then for the ledger
 * writes they caused, so the answer and a following snapshot agree.
 */
export async function carryOut(
  run: Run,
  op: ControlOp,
  members: ControlMember[],
  message?: string,
  reason?: EndReason,
): Promise<MemberAnswer[]> {
  if (members.length === 0) return [];
  const requestId = randomUUID();
  const done = new Promise<MemberAnswer[]>((resolve) => {
    const sub = run.actor.on("control.done", (event) => {
      if (event.requestId !== requestId) return;
      sub.unsubscribe();
      resolve(event.results);
    });
  });
  run.actor.send({ type: "control", request: { requestId, op, members, message, ...(reason ? { reason } : {}) } });
  const results = await done;
  await run.writer.flushed();
  return results;
}

/** Live members of the subtree under `agentId` in the order the operation needs; the named agent is `operator`. */
function members(run: Run, agentId: string, scope: Scope, order: "parentsFirst" | "leavesFirst"): ControlMember[] {
  if (scope === "agent") return [{ agentId, by: "operator" }];
  const parents = run.agents.parents();
  const ids = order === "parentsFirst" ? parentsFirst(agentId, parents) : leavesFirst(agentId, parents);
  return ids
    .filter((id) => id === agentId || isLiveIn(run, id))
    .map((id) => ({ agentId: id, by: (id === agentId ? "operator" : "cascade") as PausedBy }));
}

export const isLiveIn = (run: Run, agentId: string) => {
  const status = run.status(agentId);
  return status !== null && isLive(status);
};

const strip = (results: MemberAnswer[]): MemberResult[] =>
  results.map(({ agentId, outcome, error }) => ({ agentId, outcome, ...(error ? { error } : {}) }));

export async function pause(run: Run, agentId: string, scope: Scope): Promise<ControlResponse> {
  run.requireLive(agentId);
  const results = await carryOut(run, "pause", members(run, agentId, scope, "parentsFirst"));
  const own = results.find((r) => r.agentId === agentId);
  if (scope === "agent" && own?.outcome === "failed")
    throw new SwarmError("SANDBOX_FREEZE_FAILED", `the sandbox could not be paused: ${own.error ?? "unknown error"}`);
  return { results: strip(results) };
}

export async function resume(run: Run, agentId: string, scope: Scope): Promise<ControlResponse> {
  const status = run.requireLive(agentId);
  const held = (id: string) => run.status(id) === "paused" || run.hasPendingPause(id);
  if (status !== "paused" && !run.hasPendingPause(agentId))
    throw new SwarmError("AGENT_NOT_PAUSED", `agent ${agentId} is not paused`);
  // Only paused members are resumed; the rest of the subtree is not affected.
  const paused = members(run, agentId, scope, "leavesFirst").filter((m) => m.agentId === agentId || held(m.agentId));
  const results = await carryOut(run, "resume", paused);
  const own = results.find((r) => r.agentId === agentId);
  if (scope === "agent" && own?.outcome === "failed")
    throw new SwarmError("SANDBOX_THAW_FAILED", `the sandbox could not be resumed: ${own.error ?? "unknown error"}`);
  return { results: strip(results) };
}

/** A spend cap ran out at `agentId`: its subtree is paused, parents first, it `budget` and the rest `cascade`. */
export async function pauseForBudget(run: Run, agentId: string): Promise<void> {
  const list = members(run, agentId, "subtree", "parentsFirst").map((m) =>
    m.agentId === agentId ? { ...m, by: "budget" as const } : m,
  );
  await carryOut(run, "pause", list);
}

/** Stop leaves first; an agent that had already ended keeps its outcome and its sandbox is released. */
export async function stop(run: Run, agentId: string, scope: Scope): Promise<ControlResponse> {
  const results = await carryOut(run, "stop", members(run, agentId, scope, "leavesFirst"));
  await releaseEnded(run, results);
  return { results: strip(results) };
}

/** Members a stop (or drain) found ended (`noop`): whatever is left of their sandboxes is released. */
export async function releaseEnded(run: Run, results: readonly MemberResult[]): Promise<void> {
  for (const r of results) {
    if (r.outcome !== "noop") continue;
    const sandboxId = run.agents.get(r.agentId)?.meta.sandboxId;
    if (sandboxId) await run.deps.runtime.close(sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
  }
}

export async function steer(
  run: Run,
  agentId: string,
  message: string,
  scope: Scope,
): Promise<ControlResponse & { delivery: Delivery }> {
  run.requireLive(agentId);
  run.requireNotDraining(agentId);
  const text = scope === "subtree" ? subtreeSteerMessage(run, agentId, message) : message;
  const results = await carryOut(run, "steer", [{ agentId, by: "operator" }], text);
  const own = results[0];
  if (!own || own.outcome === "failed")
    throw new SwarmError("HARNESS_REJECTED", `the harness did not accept the message: ${own?.error ?? "no answer"}`);
  if (own.outcome === "noop") throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
  return { results: strip(results), delivery: own.delivery ?? "steer" };
}

/** DELETE /runs/:runId: abort and close every live agent, leaves first. The ledger stays. */
export async function stopAll(run: Run): Promise<void> {
  const live = leavesFirst(run.view.rootAgentId, run.agents.parents()).filter((id) => isLiveIn(run, id));
  await carryOut(
    run,
    "stop",
    live.map((id) => ({ agentId: id, by: "operator" })),
  );
}
