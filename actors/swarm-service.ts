import { errorMessage, SwarmError } from "../src/errors.ts";
import { ModelGateway } from "../src/gateway/gateway.ts";
import { loadModelCatalog } from "../src/gateway/models.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import type { ResultStore } from "../src/results/result-store.ts";
import { nodesWithin } from "../src/sandbox/node-list.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxRuntime } from "../src/sandbox/runtime.ts";
import { type AgentState, DEFAULT_RUN_LIST_LIMIT, type SwarmApi } from "../src/swarm-api.ts";
import { countStates, createRunView } from "../src/views/run-view.ts";
import { AgentDirectory } from "./agent-directory.ts";
import { finishPurges } from "./run/purge.ts";
import { Run, type RunDeps, type ServiceConfig } from "./run/run.ts";
import type { LogSubject } from "./run/run-deps.ts";
import { newRunId, planRoot } from "./run/spawn.ts";
import { StartQueue } from "./start-queue.ts";

export type { ServiceConfig };

export interface SwarmServiceDeps {
  /** `limits` defaults to `DEFAULT_SANDBOX_LIMITS`. */
  config: Omit<ServiceConfig, "limits"> & Partial<Pick<ServiceConfig, "limits">>;
  runtime: SandboxRuntime;
  ledger: Ledger;
  results: ResultStore;
  inspect?: RunDeps["inspect"];
  /** Where the service reports its lifecycle; `about` names the run (and agent) a line concerns. */
  log?: (message: string, about?: LogSubject) => void;
  /** Told of every prompt accepted (traces record prompts, whose text the ledger does not keep). */
  onPrompt?: (agentId: string, text: string) => void;
  /** The model gateway; default: pi-ai's built-in models, no models file, default pacing. */
  gateway?: ModelGateway;
  /** Admission control of sandbox starts; default: one start per core at once. */
  starts?: StartQueue;
  /** Told of each attempt to reopen a harness connection (metrics). */
  onHarnessReconnect?: () => void;
}

export interface SwarmService extends SwarmApi {
  /** Start-up: rebuild every run of the ledger and reconnect its live agents. Returns the runs restored. */
  restore(): Promise<number>;
  /** Stop every supervisor (sandboxes keep running: a restarted service reconnects). */
  close(): Promise<void>;
  /** Agents of every run it holds, by state as their views have it (for `swarmd_agents`). */
  countAgents(): Record<AgentState, number>;
}

/** The service: a map of runs, each the owner of its agents (`actors/run/run.ts`). */
export function createSwarmService(deps: SwarmServiceDeps): SwarmService {
  const config: ServiceConfig = { ...deps.config, limits: deps.config.limits ?? DEFAULT_SANDBOX_LIMITS };
  const log = deps.log ?? (() => undefined);
  const gateway = deps.gateway ?? new ModelGateway(loadModelCatalog());
  const starts = deps.starts ?? new StartQueue();
  const runs = new Map<string, Run>();
  /** Every agent of every known run, to find its run by id. */
  const directory = new AgentDirectory();

  /** A run object, not yet in the map: a run is listed once its ledger has it. */
  const build = (runId: string): Run => new Run(runId, { ...deps, config, log, gateway, starts, directory });
  /** Refused at once while the ledger cannot write, before the request does anything (507). */
  const writable = (): void => {
    const storage = deps.ledger.storage();
    if (!storage.ok) throw storage.error;
  };
  const runById = (runId: string): Run => {
    const run = runs.get(runId);
    if (!run) throw new SwarmError("RUN_NOT_FOUND", `run ${runId} does not exist`);
    return run;
  };
  /** A purged run leaves the maps at once: from then on it and its agents are 404s. */
  const forget = (run: Run): void => {
    runs.delete(run.runId);
    directory.remove(run.agentIds());
  };
  /** The run, once the ledger is known to write (a 404 comes first). */
  const writing = (run: Run): Run => {
    writable();
    return run;
  };
  // The cluster runtime's word on nodes: to the run of the sandbox's agent.
  deps.runtime.watch?.((change) => runs.get(change.runId)?.sandboxChanged(change));
  const runOf = (agentId: string): Run => {
    const runId = directory.runOf(agentId);
    const run = runId === undefined ? undefined : runs.get(runId);
    if (!run?.has(agentId)) throw new SwarmError("AGENT_NOT_FOUND", `agent ${agentId} does not exist`);
    return run;
  };

  // Every method that answers later answers errors later too: a rejected promise, never a throw.
  return {
    restore: async () => {
      await finishPurges({ ...deps, log });
      return restoreRuns(build, runs, deps.runtime, deps.ledger.runIds(), log);
    },
    createRun: async (request) => {
      const runId = newRunId();
      // Everything a run can be refused for is decided before it exists: a refusal leaves nothing.
      const root = planRoot(runId, request, {
        limits: config.limits,
        harnessOutOfReach: deps.runtime.harnessOutOfReach,
        networkRefusal: deps.runtime.networkRefusal,
        resolveModel: (model, field) => void gateway.catalog.resolve(model, field),
      });
      writable();
      const run = build(runId);
      try {
        const created = await run.start(root);
        runs.set(runId, run);
        return created;
      } catch (err) {
        run.close();
        throw err;
      }
    },
    getRun: (runId) => runById(runId).snapshot(),
    listRuns: (limit = DEFAULT_RUN_LIST_LIMIT) => {
      const summaries = [...runs.values()].map((run) => run.summary());
      // Newest first; a run id breaks ties so the order is stable.
      summaries.sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? -1 : 1));
      return { runs: summaries.slice(0, limit) };
    },
    getMachine: (agentId) => runOf(agentId).machine(agentId),
    // What records new work or a decision is refused while the ledger cannot write; pause, resume,
    // stop and a plain delete still act on the sandboxes (an operator must be able to stop agents).
    deleteRun: async (runId, options) => {
      const run = runById(runId);
      if (options?.purge) writable();
      await (options?.purge ? run.purge(() => forget(run)) : run.stopAll());
    },
    spawn: async (runId, request) => writing(runById(runId)).spawn(request),
    getAgent: async (agentId) => runOf(agentId).agent(agentId),
    setBudget: async (agentId, caps) => writing(runOf(agentId)).setBudget(agentId, caps),
    prompt: async (agentId, text) => {
      await writing(runOf(agentId)).prompt(agentId, text);
      deps.onPrompt?.(agentId, text);
    },
    steer: async (agentId, request) => writing(runOf(agentId)).steer(agentId, request.message, request.scope),
    pause: async (agentId, scope) => runOf(agentId).pause(agentId, scope),
    resume: async (agentId, scope) => runOf(agentId).resume(agentId, scope),
    stop: async (agentId, request) =>
      (request.mode === "drain" ? writing(runOf(agentId)) : runOf(agentId)).stop(agentId, request),
    listPermissions: (runId, state = "pending") => ({ permissions: runById(runId).listPermissions(state) }),
    resolvePermission: async (agentId, requestId, answer) =>
      writing(runOf(agentId)).resolvePermission(agentId, requestId, answer),
    result: async (agentId, waitSeconds, signal) => runOf(agentId).result(agentId, waitSeconds, signal),
    fork: async (agentId, request) => writing(runOf(agentId)).fork(agentId, request),
    changes: async (agentId) => runOf(agentId).changes(agentId),
    adopt: async (agentId, request) => writing(runOf(agentId)).adopt(agentId, request),
    waitFor: async (runId, request, signal) => runById(runId).waitFor(request, signal),
    hasRun: (runId) => runs.has(runId),
    listModels: (filter = {}) => ({
      models: gateway.catalog
        .list()
        .filter(
          (model) =>
            (filter.provider === undefined || model.provider === filter.provider) &&
            (!filter.available || model.key !== "none"),
        ),
    }),
    listNodes: async () => ({ nodes: await nodesWithin(deps.runtime, NODES_TIMEOUT_MS) }),
    countAgents: () => {
      let counts: Record<AgentState, number> | undefined;
      for (const run of runs.values()) counts = run.countStates(counts);
      return counts ?? countStates(createRunView(""));
    },
    async close() {
      for (const run of runs.values()) run.close();
      await gateway.closeAll();
    },
  };
}

/** How long `GET /nodes` waits for the runtime (a cluster asks every node's engine). */
const NODES_TIMEOUT_MS = 10_000;

const closeSoon = (runtime: SandboxRuntime, sandboxId: string) => runtime.close(sandboxId, AbortSignal.timeout(60_000));

/**
 * Start-up: every run of the ledger restored (`Run.restore`: each unended agent started again from
 * the ledger's facts), then the sandboxes of this data folder that no restored agent took are
 * closed. Returns the number of runs restored.
 */
async function restoreRuns(
  build: (runId: string) => Run,
  runs: Map<string, Run>,
  runtime: SandboxRuntime,
  runIds: string[],
  log: (message: string, about?: LogSubject) => void,
): Promise<number> {
  const owned = await runtime.list(AbortSignal.timeout(60_000));
  const kept = new Set<string>();
  for (const runId of runIds) {
    const run = build(runId);
    if (await run.restore(kept)) {
      runs.set(runId, run);
      continue;
    }
    run.close();
    log(`run ${runId}: its ledger records no root agent; not restored (its events stay in the ledger)`, { runId });
  }
  for (const info of owned) {
    if (kept.has(info.sandboxId)) continue;
    log(`closing sandbox ${info.sandboxId} (agent ${info.agentId} of run ${info.runId}): no live agent owns it`);
    await closeSoon(runtime, info.sandboxId).catch((err: unknown) =>
      log(`could not close ${info.sandboxId}: ${errorMessage(err)}`),
    );
  }
  return runs.size;
}
