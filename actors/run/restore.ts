import type { AgentStart, Drain, PausedBy } from "../../machines/agent.types.ts";
import type { RunView } from "../../src/views/run-view.ts";
import type { AgentTable } from "./agent-table.ts";
import type { Drains } from "./drain.ts";
import type { Permissions } from "./permissions.ts";
import { type IndexedAgent, restoredAgents } from "./restore-plan.ts";
import type { Supervisor } from "./supervisor.ts";

/** What a restart needs of the run: its fold, its table, and the path spawns take. */
export interface RestoreDeps {
  view: RunView;
  index: ReadonlyMap<string, IndexedAgent>;
  table: Pick<AgentTable, "add" | "countSpawn" | "require">;
  supervisor: Pick<Supervisor, "settled" | "send">;
  /** The one way an agent gets its actor (`Spawner.launch`). */
  launch(
    agentId: string,
    start: AgentStart,
    options: { prompt?: string; pendingPause?: PausedBy; counted: boolean },
  ): void;
  /** Tells the daemon which run the agent belongs to. */
  register(agentId: string): void;
  permissions: Pick<Permissions, "agentEnded" | "rearm">;
  drains: Pick<Drains, "rearm">;
  log(message: string): void;
}

/**
 * A run as its ledger left it: the table from the index (metas, tree, spawn counts), then every
 * agent the ledger shows unended gets its actor through the path a spawn takes, with the input
 * `restoredAgents` makes of the fold; approvals and drains under way go on. Returns the sandboxes
 * of the agents given an actor (the daemon closes the rest of the runtime's as orphans).
 */
export async function restoreRun(deps: RestoreDeps): Promise<string[]> {
  const { view, index, table, supervisor, log } = deps;
  for (const record of view.agents.values()) {
    deps.register(record.agentId);
    const meta = index.get(record.agentId)?.meta;
    if (meta)
      table.add(record.agentId, {
        meta,
        parentAgentId: record.parentAgentId,
        depth: record.depth,
        waitFor: record.waitFor,
      });
  }
  // Accepted spawns count against every ancestor's maxAgents (refused ones never did).
  for (const record of view.agents.values())
    if (record.parentAgentId && record.outcome !== "budget-exceeded") table.countSpawn(record.parentAgentId);

  const kept: string[] = [];
  for (const agent of restoredAgents(view, index)) {
    if (agent.kind === "no-meta") continue;
    if (agent.settled) supervisor.settled(agent.agentId);
    if (agent.kind !== "launch") continue;
    kept.push(table.require(agent.agentId).meta.sandboxId);
    if (agent.start.state === "ending")
      log(
        `agent ${agent.agentId} was ending (${agent.start.ending.outcome}) when the service stopped: closing its sandbox`,
      );
    else if (agent.start.state === "provisioning")
      log(`agent ${agent.agentId} was provisioning when the service stopped: provisioning it again`);
    deps.launch(agent.agentId, agent.start, { prompt: agent.prompt, pendingPause: agent.pendingPause, counted: true });
    // Drained before the daemon stopped but not yet started: it still never starts.
    if (agent.drain) supervisor.send(agent.agentId, { type: "drain", drain: agent.drain });
  }

  // Requests of agents that ended while the daemon was down are denied; the rest keep their
  // timeouts, and drains their deadlines.
  const drains: Array<{ agentId: string; drain: Drain }> = [];
  for (const record of view.agents.values()) {
    if (record.outcome !== null && record.pendingPermissions.length > 0)
      await deps.permissions.agentEnded(record.agentId, "stop");
    if (record.drain && record.outcome === null) drains.push({ agentId: record.agentId, drain: record.drain });
  }
  deps.permissions.rearm();
  deps.drains.rearm(drains);
  return kept;
}
