import { agentMachine } from "../../machines/agent.machine.ts";
import type { Fact } from "../../machines/agent.types.ts";
import type { RunView } from "../../src/views/run-view.ts";
import { answerAgentCall } from "./agent-calls.ts";
import type { AgentTable } from "./agent-table.ts";
import { Controls } from "./controls.ts";
import { Drains } from "./drain.ts";
import { Forks } from "./forks.ts";
import { loggedMachine } from "./machine-log.ts";
import { Permissions } from "./permissions.ts";
import type { Results } from "./results.ts";
import type { RunDeps } from "./run-deps.ts";
import { createRunEffects } from "./run-effects.ts";
import { RunWriter } from "./run-writer.ts";
import { Spawner } from "./spawn.ts";
import { Spend } from "./spend.ts";
import { subtreeSteerMessage } from "./steer-message.ts";
import { Supervisor } from "./supervisor.ts";
import { ToolRefusals } from "./tool-refusals.ts";

/** What the run keeps itself and lends its parts. */
export interface RunHooks {
  view: RunView;
  table: AgentTable;
  results: Results;
  /** Resolves at the run's next change; rejects when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<unknown>;
  /** Every fact an agent machine states. */
  onFact(agentId: string, fact: Fact): void;
  /** Each snapshot an agent's machine takes, with the event that led there: its machine log. */
  transitioned(agentId: string, event: string, value: unknown): void;
  /** A timer the run clears when it closes. */
  timer(fire: () => void, delayMs: number): void;
  /** The run's log (its lines named with the run). */
  log(message: string): void;
}

/**
 * A run's parts, each wired to the others through the narrow interface it declares: the writer,
 * the agent machines' effects and the supervisor holding them, and the collaborators (controls,
 * drains, spend, approvals, spawning). The object graph has cycles (an agent's `spawn_agent` goes
 * from its harness effect to the spawner, which adds an agent to the supervisor); the import graph
 * does not: no part imports another's owner, and none imports `run.ts`.
 */
export function assembleRun(runId: string, deps: RunDeps, hooks: RunHooks) {
  const { view, table, nextChange } = hooks;
  const writer = new RunWriter(deps.ledger, runId, deps.results, deps.log);
  const append = writer.append.bind(writer);
  const refusals = new ToolRefusals({ append, timer: hooks.timer, log: hooks.log });
  const refused = refusals.record.bind(refusals);

  const { actors, harness } = createRunEffects({
    runId,
    runtime: deps.runtime,
    ledger: deps.ledger,
    results: deps.results,
    gateway: deps.gateway,
    admit: (agentId, signal, start) => deps.starts.run(agentId, signal, start),
    hibernateAfterMs: deps.config.hibernateAfterMs ?? 0,
    onHarnessReconnect: deps.onHarnessReconnect,
    table,
    writer,
    outcomeOf: (agentId) => view.agents.get(agentId)?.outcome ?? null,
    hostCall: (agentId, call, signal) =>
      answerAgentCall(
        {
          policyOf: (id) => table.require(id).meta.approve ?? [],
          permissions: permissions,
          supervisor: supervisor,
          spawn: (request, root) => spawner.spawn(request, root, true),
          fork: (id, call) => forks.forkFromInside(id, call),
          waitMany: (request, s) => hooks.results.waitMany(request, s),
          recorded: (id) => view.agents.has(id),
          result: (id, waitSeconds, s) => hooks.results.result(id, waitSeconds, s),
          refused,
        },
        agentId,
        call,
        signal,
      ),
    refused,
    whenLive: (agentId, signal) => supervisor.whenLive(agentId, signal),
    admitSpend: (agentId, signal) => spend.admit(agentId, signal),
    send: (agentId, event) => supervisor.send(agentId, event),
    status: (agentId) => supervisor.status(agentId),
    nextChange,
    log: deps.log,
    runLog: hooks.log,
  });
  const supervisor: Supervisor = new Supervisor({
    runId,
    agent: loggedMachine(agentMachine.provide({ actors }), hooks.transitioned),
    memberTimeoutMs: deps.config.memberTimeoutMs,
    onFact: hooks.onFact,
    endedInLedger: (agentId) => {
      const state = view.agents.get(agentId)?.state;
      return state === "done" || state === "aborted" ? state : null;
    },
    inspect: deps.inspect,
    log: deps.log,
  });
  const controls: Controls = new Controls({
    supervisor,
    tree: table,
    flushed: () => writer.flushed(),
    releaseSandbox: async (agentId) => {
      const sandboxId = table.get(agentId)?.meta.sandboxId;
      if (sandboxId) await deps.runtime.close(sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
    },
    subtreeSteer: (agentId, text) => subtreeSteerMessage(view.agents, (id) => supervisor.status(id), agentId, text),
  });
  const drains: Drains = new Drains({
    supervisor,
    tree: table,
    append,
    flushed: () => writer.flushed(),
    releaseEnded: (results) => controls.releaseEnded(results),
    stopLate: async (ids) => (await controls.stopLive(view.rootAgentId, ids, "drain-timeout")).length,
    timer: hooks.timer,
    log: hooks.log,
  });
  const spend: Spend = new Spend({
    table,
    subtreeUsage: (agentId) => view.agents.get(agentId)?.subtreeUsage,
    supervisor,
    append,
    pauseForBudget: (agentId) => controls.pauseForBudget(agentId),
    nextChange,
  });
  const permissions: Permissions = new Permissions({
    requests: view.permissions,
    pendingOf: (agentId) => view.agents.get(agentId)?.pendingPermissions ?? [],
    supervisor,
    timeoutOf: (agentId) => table.require(agentId).meta.approveTimeoutMs,
    append,
    log: hooks.log,
  });
  const spawner: Spawner = new Spawner({
    runId,
    table,
    recorded: (agentId) => view.agents.has(agentId),
    supervisor,
    append,
    earlierAnswer: (key) => deps.ledger.getIndex(key),
    resolveModel: (model, field) => void deps.gateway.catalog.resolve(model, field),
    harnessOutOfReach: deps.runtime.harnessOutOfReach,
    turnMaxMs: deps.config.turnMaxMs,
    spend: spend,
    drains: drains,
    register: (agentId) => deps.directory.add(agentId, runId),
    unregister: (agentId) => deps.directory.remove([agentId]),
  });

  const forks: Forks = new Forks({
    runId,
    table,
    supervisor,
    spawner,
    runtime: deps.runtime,
    settledTurns: (agentId) => view.agents.get(agentId)?.settledTurns ?? 0,
    recorded: (agentId) => view.agents.has(agentId),
    append,
  });

  return { writer, supervisor, harness, controls, drains, spend, permissions, spawner, refusals, forks };
}
