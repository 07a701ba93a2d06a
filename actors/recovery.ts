import type { AgentInput, StartState } from "../machines/agent.types.ts";
import { ancestorsOf, parentsFirst } from "../machines/tree.ts";
import { errorMessage } from "../src/errors.ts";
import type { SandboxInfo } from "../src/sandbox/runtime.ts";
import { applyEvent, parentMap } from "../src/views/run-view.ts";
import { addAgent, appendToRun, openRun, recordedPrompts, type AgentMeta, type RunHandle, type ServiceCore } from "./service-core.ts";
import { endingKey } from "./fact-tap.ts";
import { agentKey } from "./spawn.ts";
import { rootGrants } from "../src/spec/grants.ts";

/**
 * Start-up: rebuild every run from the ledger and give each live agent its actor back, in the
 * state the ledger left it, reconnected to its sandbox. Agents whose sandbox vanished end `lost`;
 * an agent caught mid-provisioning is provisioned again from scratch; sandboxes of this data
 * folder that belong to no live agent are closed. Returns the number of runs restored.
 */
export async function restoreRuns(core: ServiceCore, log: (message: string) => void): Promise<number> {
  const owned = new Map((await core.runtime.list(AbortSignal.timeout(60_000))).map((s) => [s.sandboxId, s]));
  const kept = new Set<string>();
  const runIds = core.ledger.runIds();
  for (const runId of runIds) {
    const run = openRun(core, runId);
    const settledCount = new Map<string, number>();
    for await (const event of core.ledger.iterate(runId, 0)) {
      if (event.seq <= run.view.asOf) continue; // already folded through the live subscription
      applyEvent(run.view, event);
      if (event.type === "handle_settled" && event.agentId) settledCount.set(event.agentId, (settledCount.get(event.agentId) ?? 0) + 1);
    }
    await restoreRun(core, run, owned, kept, settledCount, log);
  }
  for (const [sandboxId, info] of owned) {
    if (kept.has(sandboxId)) continue;
    log(`closing sandbox ${sandboxId} (agent ${info.agentId} of run ${info.runId}): no live agent owns it`);
    await core.runtime.close(sandboxId, AbortSignal.timeout(60_000)).catch((err: unknown) => log(`could not close ${sandboxId}: ${errorMessage(err)}`));
  }
  return runIds.length;
}

async function restoreRun(
  core: ServiceCore,
  run: RunHandle,
  owned: Map<string, SandboxInfo>,
  kept: Set<string>,
  settledCount: Map<string, number>,
  log: (message: string) => void,
): Promise<void> {
  const agents = run.view.agents;
  const parents = parentMap(run.view);
  for (const agent of agents.values()) {
    core.agentRuns.set(agent.agentId, run.runId);
    const raw = await core.ledger.getIndex(agentKey(agent.agentId));
    if (raw) {
      const meta = JSON.parse(raw) as AgentMeta;
      // Agents recorded before grants existed get what their spec asked, within today's ceiling.
      meta.grants ??= rootGrants({ ...meta.spec, limits: undefined }, core.config.limits, "spec");
      run.meta.set(agent.agentId, meta);
    }
    // Accepted spawns count against every ancestor's maxAgents (refused ones never did).
    if (agent.outcome !== "budget-exceeded") {
      for (const id of ancestorsOf(agent.agentId, parents)) run.descendants[id] = (run.descendants[id] ?? 0) + 1;
    }
  }
  // First end what cannot go on (so parents count only children that are really live), then
  // give every remaining live agent its actor back, parents before children.
  for (const agent of agents.values()) {
    const meta = run.meta.get(agent.agentId);
    if (agent.outcome || !meta) continue;
    const ending = await core.ledger.getIndex(endingKey(agent.agentId));
    if (ending) {
      // The agent was ending when the service stopped: finish closing and record the end it had.
      const { outcome, error } = JSON.parse(ending) as { outcome: string; error?: string };
      log(`agent ${agent.agentId} was ending (${outcome}) when the service stopped: closing its sandbox`);
      await core.runtime.close(meta.sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
      await endAgent(core, run, agent.agentId, outcome, error ?? null);
      continue;
    }
    if (agent.state === "provisioning") {
      log(`agent ${agent.agentId} was provisioning when the service stopped: provisioning it again`);
      await core.runtime.close(meta.sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
      continue;
    }
    if (agent.state !== "running" && agent.state !== "paused") continue;
    const sandbox = owned.get(meta.sandboxId);
    if (!sandbox || sandbox.status === "gone") {
      const why = sandbox ? "its sandbox's processes vanished" : "its sandbox no longer exists";
      log(`agent ${agent.agentId} is lost: ${why}`);
      await endAgent(core, run, agent.agentId, "lost", `agent lost while the service was down: ${why}`);
    }
  }

  for (const agentId of parentsFirst(run.view.rootAgentId, parents)) {
    const agent = agents.get(agentId)!;
    const meta = run.meta.get(agentId);
    if (agent.settled || agent.outcome) run.actor.send({ type: "agent.settled", agentId });
    if (agent.outcome || !meta) continue;
    const base: AgentInput = {
      agentId,
      runId: run.runId,
      sandboxId: meta.sandboxId,
      start: agent.state as StartState,
      keepAlive: meta.keepAlive,
      turnMaxMs: core.config.turnMaxMs,
      liveChildren: agent.children.filter((id) => agents.get(id)?.outcome === null).length,
    };
    kept.add(meta.sandboxId);
    if (agent.state === "spawning" || agent.state === "provisioning") {
      addAgent(core, run, { ...base, prompt: agent.prompt ?? undefined }, agent.parentAgentId, agent.waitFor, true);
      continue;
    }
    await matchFreezer(core, meta.sandboxId, owned.get(meta.sandboxId)!.status, agent.state === "paused", log);
    // Turns owed come from the ledger (prompts the harness acknowledged, turns settled), never from
    // the control folder: the agent can write there (a FIFO there once hung every start-up).
    const settled = settledCount.get(agentId) ?? 0;
    const accepted = Math.max(await recordedPrompts(core, agentId), settled);
    addAgent(
      core,
      run,
      {
        ...base,
        pausedBy: agent.state === "paused" ? (agent.pausedBy ?? "operator") : undefined,
        turns: accepted,
        inflight: accepted - settled,
      },
      agent.parentAgentId,
      [],
      true,
    );
  }
}

async function endAgent(core: ServiceCore, run: RunHandle, agentId: string, outcome: string, error: string | null): Promise<void> {
  await appendToRun(core, run, [{ type: "agent_ended", agentId, data: { outcome, endedAt: Date.now(), error } }]);
  run.actor.send({ type: "agent.settled", agentId });
}

/**
 * A crash between a freeze (or thaw) and its ledger event leaves the sandbox out of step with the
 * ledger, which is what the operator was told. The ledger wins: the unanswered request did not happen.
 */
async function matchFreezer(core: ServiceCore, sandboxId: string, status: SandboxInfo["status"], paused: boolean, log: (message: string) => void): Promise<void> {
  const signal = AbortSignal.timeout(60_000);
  if (paused && status === "running") {
    log(`sandbox ${sandboxId} runs but its agent is recorded paused: freezing it again`);
    await core.runtime.freeze(sandboxId, signal);
  } else if (!paused && status === "frozen") {
    log(`sandbox ${sandboxId} is frozen but its agent is recorded running: thawing it`);
    await core.runtime.thaw(sandboxId, signal);
  }
}
