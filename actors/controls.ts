import { randomUUID } from "node:crypto";
import type { ControlOp, PausedBy } from "../machines/agent.types.ts";
import type { ControlMember, MemberResult } from "../machines/run.machine.ts";
import { leavesFirst, parentsFirst } from "../machines/tree.ts";
import { SwarmError } from "../src/errors.ts";
import { parentMap } from "../src/views/run-view.ts";
import type { ControlResponse, Delivery, Scope } from "../src/swarm-api.ts";
import { agentState, hasPendingPause, isLive, requireLive } from "./agent-state.ts";
import type { RunHandle, ServiceCore } from "./service-core.ts";
import { subtreeSteerMessage } from "./steer-message.ts";

/** Find the run of an agent, or 404. */
export function runOf(core: ServiceCore, agentId: string): RunHandle {
  const runId = core.agentRuns.get(agentId);
  const run = runId ? core.runs.get(runId) : undefined;
  if (!run || !run.view.agents.has(agentId)) throw new SwarmError("AGENT_NOT_FOUND", `agent ${agentId} does not exist`);
  return run;
}

/**
 * Hand a control request to the run's supervisor and wait for every member's answer, then for the
 * ledger writes they caused, so the answer and a following snapshot agree.
 */
async function carryOut(run: RunHandle, op: ControlOp, members: ControlMember[], message?: string): Promise<MemberResult[]> {
  if (members.length === 0) return [];
  const requestId = randomUUID();
  const done = new Promise<MemberResult[]>((resolve) => {
    const sub = run.actor.on("control.done", (event) => {
      if (event.requestId !== requestId) return;
      sub.unsubscribe();
      resolve(event.results);
    });
  });
  run.actor.send({ type: "control", request: { requestId, op, members, message } });
  const results = await done;
  await run.tail;
  return results;
}

/** Live members of the subtree under `agentId` in the order the operation needs; the named agent is `operator`. */
function members(run: RunHandle, agentId: string, scope: Scope, order: "parentsFirst" | "leavesFirst"): ControlMember[] {
  if (scope === "agent") return [{ agentId, by: "operator" }];
  const parents = parentMap(run.view);
  const ids = order === "parentsFirst" ? parentsFirst(agentId, parents) : leavesFirst(agentId, parents);
  return ids
    .filter((id) => id === agentId || isLive(agentState(run, id)))
    .map((id) => ({ agentId: id, by: (id === agentId ? "operator" : "cascade") as PausedBy }));
}

const strip = (results: MemberResult[]) => results.map(({ agentId, outcome, error }) => ({ agentId, outcome, ...(error ? { error } : {}) }));

export async function pause(core: ServiceCore, agentId: string, scope: Scope): Promise<ControlResponse> {
  const run = runOf(core, agentId);
  requireLive(run, agentId);
  const results = await carryOut(run, "pause", members(run, agentId, scope, "parentsFirst"));
  const own = results.find((r) => r.agentId === agentId);
  if (scope === "agent" && own?.outcome === "failed") throw new SwarmError("SANDBOX_FREEZE_FAILED", `the sandbox could not be paused: ${own.error ?? "unknown error"}`);
  return { results: strip(results) };
}

export async function resume(core: ServiceCore, agentId: string, scope: Scope): Promise<ControlResponse> {
  const run = runOf(core, agentId);
  const state = requireLive(run, agentId);
  if (state !== "paused" && !hasPendingPause(run, agentId)) throw new SwarmError("AGENT_NOT_PAUSED", `agent ${agentId} is not paused`);
  const all = members(run, agentId, scope, "leavesFirst");
  // Only paused members are resumed; the rest of the subtree is not affected.
  const paused = all.filter((m) => m.agentId === agentId || agentState(run, m.agentId) === "paused" || hasPendingPause(run, m.agentId));
  const results = await carryOut(run, "resume", paused);
  const own = results.find((r) => r.agentId === agentId);
  if (scope === "agent" && own?.outcome === "failed") throw new SwarmError("SANDBOX_THAW_FAILED", `the sandbox could not be resumed: ${own.error ?? "unknown error"}`);
  return { results: strip(results) };
}

/** Stop leaves first; an agent that had already ended keeps its outcome and its sandbox is released. */
export async function stop(core: ServiceCore, agentId: string, scope: Scope): Promise<ControlResponse> {
  const run = runOf(core, agentId);
  const results = await carryOut(run, "stop", members(run, agentId, scope, "leavesFirst"));
  for (const r of results) {
    if (r.outcome !== "noop") continue;
    const sandboxId = run.meta.get(r.agentId)?.sandboxId;
    if (sandboxId) await core.runtime.close(sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
  }
  return { results: strip(results) };
}

export async function steer(core: ServiceCore, agentId: string, message: string, scope: Scope): Promise<ControlResponse & { delivery: Delivery }> {
  const run = runOf(core, agentId);
  requireLive(run, agentId);
  const text = scope === "subtree" ? subtreeSteerMessage(run, agentId, message) : message;
  const results = await carryOut(run, "steer", [{ agentId, by: "operator" }], text);
  const own = results[0];
  if (!own || own.outcome === "failed") throw new SwarmError("HARNESS_REJECTED", `the harness did not accept the message: ${own?.error ?? "no answer"}`);
  if (own.outcome === "noop") throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
  return { results: strip(results), delivery: own.delivery ?? "steer" };
}

/** DELETE /runs/:runId: abort and close every live agent, leaves first. The ledger stays. */
export async function deleteRun(core: ServiceCore, runId: string): Promise<void> {
  const run = core.runs.get(runId);
  if (!run) throw new SwarmError("RUN_NOT_FOUND", `run ${runId} does not exist`);
  const root = run.view.rootAgentId;
  const parents = parentMap(run.view);
  const live = leavesFirst(root, parents).filter((id) => isLive(agentState(run, id)));
  await carryOut(run, "stop", live.map((id) => ({ agentId: id, by: "operator" })));
}
