import type { Ending } from "../../machines/agent.types.ts";
import { parentsFirst } from "../../machines/tree.ts";
import { errorMessage } from "../../src/errors.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { agentKey, endingKey, promptsKey } from "../../src/ledger/ledger-keys.ts";
import type { SandboxInfo, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { rootGrants } from "../../src/spec/grants.ts";
import { foldEvent } from "../../src/views/run-view.ts";
import type { AgentMeta } from "./agent-index.ts";
import { rearmDrains } from "./drain.ts";
import type { Run } from "./run.ts";

/** The runtime's sandboxes at start-up, and those a live agent took back. */
export interface Sandboxes {
  owned: Map<string, SandboxInfo>;
  kept: Set<string>;
}

const closeSoon = (runtime: SandboxRuntime, sandboxId: string) => runtime.close(sandboxId, AbortSignal.timeout(60_000));

/**
 * Start-up: rebuild every run from the ledger and give each live agent its actor back, in the
 * state the ledger left it, reconnected to its sandbox. Agents whose sandbox vanished end `lost`;
 * an agent caught mid-provisioning is provisioned again from scratch; sandboxes of this data
 * folder that belong to no live agent are closed. Returns the number of runs restored.
 */
export async function restoreRuns(
  open: (runId: string) => Run,
  runtime: SandboxRuntime,
  ledger: Ledger,
  log: (message: string) => void,
): Promise<number> {
  const sandboxes: Sandboxes = {
    owned: new Map((await runtime.list(AbortSignal.timeout(60_000))).map((s) => [s.sandboxId, s])),
    kept: new Set(),
  };
  const runIds = ledger.runIds();
  for (const runId of runIds) await open(runId).restore(sandboxes, log);
  for (const [sandboxId, info] of sandboxes.owned) {
    if (sandboxes.kept.has(sandboxId)) continue;
    log(`closing sandbox ${sandboxId} (agent ${info.agentId} of run ${info.runId}): no live agent owns it`);
    await closeSoon(runtime, sandboxId).catch((err: unknown) =>
      log(`could not close ${sandboxId}: ${errorMessage(err)}`),
    );
  }
  return runIds.length;
}

/**
 * One run, from its ledger only: its events (the view, turns settled per agent) and its index
 * (metas, how an ending agent ends, prompts the harness acknowledged). Never the control folder:
 * the agent can write there.
 */
export async function restoreRun(run: Run, sandboxes: Sandboxes, log: (message: string) => void): Promise<void> {
  const { ledger, runtime, config } = run.deps;
  const settledTurns = new Map<string, number>();
  for await (const event of ledger.iterate(run.runId, 0)) {
    if (event.seq > run.view.asOf) foldEvent(run.view, event); // later ones came through the live subscription
    if (event.type === "handle_settled" && event.agentId)
      settledTurns.set(event.agentId, (settledTurns.get(event.agentId) ?? 0) + 1);
  }
  const agents = run.view.agents;
  for (const agent of agents.values()) {
    const raw = await ledger.getIndex(agentKey(agent.agentId));
    if (!raw) {
      run.deps.onAgent(agent.agentId); // recorded before metas were: viewable, never live again
      continue;
    }
    const meta = JSON.parse(raw) as AgentMeta;
    // Agents recorded before grants existed get what their spec asked, within today's ceiling.
    meta.grants ??= rootGrants({ ...meta.spec, limits: undefined }, config.limits, "spec");
    run.track(agent.agentId, { meta, parentAgentId: agent.parentAgentId, depth: agent.depth, waitFor: agent.waitFor });
  }
  // Accepted spawns count against every ancestor's maxAgents (refused ones never did).
  for (const agent of agents.values())
    if (agent.parentAgentId && agent.outcome !== "budget-exceeded") run.agents.countSpawn(agent.parentAgentId);

  // First end what cannot go on (so parents count only children that are really live).
  for (const agent of agents.values()) {
    const entry = run.agents.get(agent.agentId);
    if (agent.outcome || !entry) continue;
    const sandboxId = entry.meta.sandboxId;
    const ending = await ledger.getIndex(endingKey(agent.agentId));
    if (ending) {
      // The agent was ending when the service stopped: finish closing and record the end it had.
      const { outcome, error, reason } = JSON.parse(ending) as Ending;
      log(`agent ${agent.agentId} was ending (${outcome}) when the service stopped: closing its sandbox`);
      await closeSoon(runtime, sandboxId).catch(() => undefined);
      await run.writer.ended(agent.agentId, outcome, error ?? null, reason);
    } else if (agent.state === "provisioning") {
      log(`agent ${agent.agentId} was provisioning when the service stopped: provisioning it again`);
      await closeSoon(runtime, sandboxId).catch(() => undefined);
    } else if (agent.state === "running" || agent.state === "paused") {
      const sandbox = sandboxes.owned.get(sandboxId);
      if (sandbox && sandbox.status !== "gone") continue;
      const why = sandbox ? "its sandbox's processes vanished" : "its sandbox no longer exists";
      log(`agent ${agent.agentId} is lost: ${why}`);
      await run.writer.ended(agent.agentId, "lost", `agent lost while the service was down: ${why}`);
    }
  }

  // Then give every remaining live agent its actor back through the path spawns take, parents first.
  for (const agentId of parentsFirst(run.view.rootAgentId, run.agents.parents())) {
    const agent = agents.get(agentId)!;
    const entry = run.agents.get(agentId);
    if (agent.settled || agent.outcome) run.actor.send({ type: "agent.settled", agentId });
    if (agent.outcome || !entry) {
      run.agents.sandboxGone(agentId);
      continue;
    }
    sandboxes.kept.add(entry.meta.sandboxId);
    if (agent.state === "spawning" || agent.state === "provisioning") {
      run.addAgent(agentId, { start: agent.state, prompt: agent.prompt ?? undefined }, true);
      // Drained before the daemon stopped but not yet ended: it still never starts.
      if (agent.drain) run.actor.getSnapshot().children[agentId]?.send({ type: "drain", drain: agent.drain });
      continue;
    }
    const paused = agent.state === "paused";
    await matchFreezer(runtime, entry.meta.sandboxId, sandboxes.owned.get(entry.meta.sandboxId)!.status, paused, log);
    const settled = settledTurns.get(agentId) ?? 0;
    const accepted = Math.max(await run.recordedCount(promptsKey(agentId)), settled);
    const liveChildren = agent.children.filter((id) => agents.get(id)?.outcome === null).length;
    // Its harness lived on and calls its model as before: the gateway socket is served again.
    // (A model no longer in the catalog, say: its calls then fail and its turns with them.)
    try {
      await run.deps.gateway.open(runtime.controlDir(entry.meta.sandboxId), run.modelCaller(agentId));
    } catch (err) {
      log(`agent ${agentId}: its model gateway could not be opened again: ${errorMessage(err)}`);
    }
    const restored = {
      pausedBy: paused ? (agent.pausedBy ?? "operator") : null,
      turns: accepted,
      inflight: accepted - settled,
      liveChildren,
      draining: agent.drain ?? null,
      approvals: agent.pendingPermissions.length,
    };
    run.addAgent(agentId, { restored }, true);
  }

  // Approvals and drains under way go on: requests of agents that ended meanwhile are denied, the
  // rest keep their timeouts; drains keep their deadlines.
  for (const agent of agents.values())
    if (agent.outcome !== null && agent.pendingPermissions.length > 0)
      await run.permissions.agentEnded(agent.agentId, "stop");
  run.permissions.rearm();
  rearmDrains(run);
}

/**
 * A crash between a freeze (or thaw) and its ledger event leaves the sandbox out of step with the
 * ledger, which is what the operator was told. The ledger wins: the unanswered request did not happen.
 */
async function matchFreezer(
  runtime: SandboxRuntime,
  sandboxId: string,
  status: SandboxInfo["status"],
  paused: boolean,
  log: (message: string) => void,
): Promise<void> {
  const signal = AbortSignal.timeout(60_000);
  if (paused && status === "running") {
    log(`sandbox ${sandboxId} runs but its agent is recorded paused: freezing it again`);
    await runtime.freeze(sandboxId, signal);
  } else if (!paused && status === "frozen") {
    log(`sandbox ${sandboxId} is frozen but its agent is recorded running: thawing it`);
    await runtime.thaw(sandboxId, signal);
  }
}
