import { agentMachine } from "../machines/agent.machine.ts";
import type { ProvisionInput } from "../machines/agent.types.ts";
import { SwarmError } from "../src/errors.ts";
import type { HarnessEventMessage } from "../src/harness/protocol.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import type { ResultStore } from "../src/results/result-store.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxRuntime } from "../src/sandbox/runtime.ts";
import { grantedSpec } from "../src/spec/grants.ts";
import type { AgentView, SwarmApi } from "../src/swarm-api.ts";
import { agentView, runSnapshot } from "../src/views/run-view.ts";
import { agentState, requireLive } from "./agent-state.ts";
import { deleteRun, pause, resume, runOf, steer, stop } from "./controls.ts";
import { endingKey, hseqKey } from "./fact-tap.ts";
import { createHarnessActor } from "./harness.actor.ts";
import { answerHostCall } from "./host-calls.ts";
import { readResult } from "./read-result.ts";
import { createSandboxActors, type ProvisionPlan } from "./sandbox.actors.ts";
import { appendToRun, createWaiters, recordedPrompts, recordPrompts, type ServiceConfig, type ServiceCore } from "./service-core.ts";
import { createRun, spawnAgent } from "./spawn.ts";

export interface SwarmServiceDeps {
  /** `limits` defaults to `DEFAULT_SANDBOX_LIMITS`. */
  config: Omit<ServiceConfig, "limits"> & Partial<Pick<ServiceConfig, "limits">>;
  runtime: SandboxRuntime;
  ledger: Ledger;
  results: ResultStore;
  inspect?: ServiceCore["inspect"];
  log?: (message: string) => void;
}

export interface SwarmService extends SwarmApi {
  /** The shared state, for start-up recovery and tests. */
  readonly core: ServiceCore;
  /** Stop every supervisor (sandboxes keep running: a restarted service reconnects). */
  close(): Promise<void>;
}

const SESSION_STATS_TIMEOUT_MS = 2_000;

export function createSwarmService(deps: SwarmServiceDeps): SwarmService {
  const core: ServiceCore = {
    config: { ...deps.config, limits: deps.config.limits ?? DEFAULT_SANDBOX_LIMITS },
    runtime: deps.runtime,
    ledger: deps.ledger,
    results: deps.results,
    runs: new Map(),
    agentRuns: new Map(),
    clients: new Map(),
    waiters: createWaiters(),
    agentLogic: agentMachine,
    inspect: deps.inspect,
    log: deps.log ?? (() => undefined),
  };
  core.agentLogic = agentMachine.provide({
    actors: {
      ...createSandboxActors({
        runtime: deps.runtime,
        plan: (input, signal) => planProvision(core, input, signal),
        recordEnding: async ({ agentId, ending }) => {
          const runId = core.agentRuns.get(agentId);
          const run = runId ? core.runs.get(runId) : undefined;
          if (run) await appendToRun(core, run, [], [{ key: endingKey(agentId), value: JSON.stringify(ending) }]);
        },
      }),
      harness: createHarnessActor({
        runtime: deps.runtime,
        clients: core.clients,
        recordedHseq: async (agentId) => Number((await deps.ledger.getIndex(hseqKey(agentId))) ?? 0),
        recordedPrompts: (agentId) => recordedPrompts(core, agentId),
        recordPrompts: (runId, agentId, count) => recordPrompts(core, runId, agentId, count),
        persist: (runId, agentId, event) => persistHarnessEvent(core, runId, agentId, event),
        publish: (runId, agentId, event) => deps.ledger.publish(runId, { type: event.event, agentId, data: event.data }),
        hostCall: (agentId, call) => answerHostCall(core, agentId, call),
        log: core.log,
      }),
    },
  });

  return {
    core,
    createRun: (request) => createRun(core, request),
    getRun(runId) {
      const run = core.runs.get(runId);
      if (!run) throw new SwarmError("RUN_NOT_FOUND", `run ${runId} does not exist`);
      return runSnapshot(run.view);
    },
    deleteRun: (runId) => deleteRun(core, runId),
    spawn: (runId, request) => spawnAgent(core, runId, request),
    async getAgent(agentId) {
      const run = runOf(core, agentId);
      const view: AgentView & { sessionStats?: Record<string, unknown> } = agentView(run.view.agents.get(agentId)!);
      const client = core.clients.get(agentId);
      if (client && agentState(run, agentId) === "running") {
        const stats = await client.request({ type: "get_session_stats" }, SESSION_STATS_TIMEOUT_MS).catch(() => undefined);
        if (stats && typeof stats === "object") view.sessionStats = stats as Record<string, unknown>;
      }
      return view;
    },
    async prompt(agentId, text) {
      const run = runOf(core, agentId);
      requireLive(run, agentId);
      run.actor.getSnapshot().children[agentId]?.send({ type: "prompt", text });
    },
    steer: (agentId, request) => steer(core, agentId, request.message, request.scope),
    pause: (agentId, scope) => pause(core, agentId, scope),
    resume: (agentId, scope) => resume(core, agentId, scope),
    stop: (agentId, request) => stop(core, agentId, request.scope),
    result: (agentId, waitSeconds, signal) => readResult(core, agentId, waitSeconds, signal),
    hasRun: (runId) => core.runs.has(runId),
    async close() {
      for (const run of core.runs.values()) {
        run.actor.stop();
        run.unsubscribe();
      }
      for (const client of core.clients.values()) client.close();
    },
  };
}

async function persistHarnessEvent(core: ServiceCore, runId: string, agentId: string, event: HarnessEventMessage): Promise<void> {
  const run = core.runs.get(runId);
  if (!run) return;
  const data = { ...event.data, hseq: event.hseq, harnessAt: event.at };
  await appendToRun(core, run, [{ type: event.event, agentId, data }], [{ key: hseqKey(agentId), value: String(event.hseq) }]);
}

/** Fresh or forked sandbox, and `/inputs/<id>.md` for every agent of `waitFor`. */
async function planProvision(core: ServiceCore, input: ProvisionInput, signal: AbortSignal): Promise<ProvisionPlan> {
  const run = runOf(core, input.agentId);
  const record = run.view.agents.get(input.agentId)!;
  const meta = run.meta.get(input.agentId)!;
  let parentSandboxId: string | null = null;
  if (record.parentAgentId) {
    // A child spawned while its parent is still provisioning forks once the parent's sandbox exists.
    for (;;) {
      signal.throwIfAborted();
      const parent = run.view.agents.get(record.parentAgentId);
      if (!parent || parent.outcome !== null) throw new Error(`parent ${record.parentAgentId} ended before the fork`);
      if (parent.sandboxId) {
        parentSandboxId = parent.sandboxId;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const inputs: Record<string, string> = {};
  for (const dep of record.waitFor) {
    const depRecord = run.view.agents.get(dep);
    inputs[`${dep}.md`] = core.results.read(dep) ?? `(no result: agent ${dep} ended with outcome ${depRecord?.outcome ?? "unknown"})\n`;
  }
  return {
    request: {
      sandboxId: input.sandboxId,
      runId: input.runId,
      agentId: input.agentId,
      spec: grantedSpec(meta.spec, meta.grants),
      env: meta.grants.env,
      network: meta.grants.network,
      image: meta.grants.image,
      limits: meta.grants.limits,
    },
    parentSandboxId,
    inputs,
  };
}
