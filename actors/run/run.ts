import { EventEmitter, once } from "node:events";
import type { InspectionEvent, Observer } from "xstate";
import { agentMachine } from "../../machines/agent.machine.ts";
import type { Ending, Fact } from "../../machines/agent.types.ts";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import type { ModelCaller } from "../../src/gateway/model-caller.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { agentKey, endingKey, hseqKey, promptsKey } from "../../src/ledger/ledger-keys.ts";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { SandboxLimits, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { rootGrants } from "../../src/spec/grants.ts";
import {
  type AgentDetail,
  type AgentState,
  type CapChange,
  type ControlResponse,
  type CreateRunRequest,
  type CreateRunResponse,
  DEFAULT_DRAIN_TIMEOUT_MS,
  type Delivery,
  type MachineView,
  type PermissionAnswer,
  type PermissionState,
  type PermissionView,
  type ResultView,
  type RunSnapshot,
  type RunSummary,
  type Scope,
  type SpawnRequest,
  type SpawnResponse,
  type SpendView,
  type StopRequest,
} from "../../src/swarm-api.ts";
import { agentView, countStates, createRunView, foldEvent, runSnapshot, runSummary } from "../../src/views/run-view.ts";
import { createHarnessEffect, type HarnessEffect } from "../effects/harness.actor.ts";
import { createSandboxActors } from "../effects/sandbox.actors.ts";
import type { Admit, StartQueue } from "../start-queue.ts";
import { answerAgentCall } from "./agent-calls.ts";
import { type AgentMeta, AgentTable } from "./agent-table.ts";
import { Controls } from "./controls.ts";
import { Drains } from "./drain.ts";
import { MachineLog } from "./machine-log.ts";
import { Permissions } from "./permissions.ts";
import { planProvision } from "./provision-plan.ts";
import { purgeRun } from "./purge.ts";
import { type IndexedAgent, restoredAgents } from "./restore.ts";
import { RunWriter } from "./run-writer.ts";
import { LedgerScriptCursor } from "./script-cursor.ts";
import { Spawner } from "./spawn.ts";
import { Spend } from "./spend.ts";
import { subtreeSteerMessage } from "./steer-message.ts";
import { Supervisor } from "./supervisor.ts";

export interface ServiceConfig {
  dataDir: string;
  /** Quiet-turn limit (SWARM_TURN_MAX_MS). */
  turnMaxMs: number;
  /** The most any sandbox gets (SWARM_LIMIT_*): the ceiling of every run's root. */
  limits: SandboxLimits;
  /** How long a control waits for one member's answer (SWARM_MEMBER_TIMEOUT_MS); default 60 s. */
  memberTimeoutMs?: number;
  /** Idle time after which an agent's harness hibernates (SWARM_HIBERNATE_AFTER_MS); 0 or absent: never. */
  hibernateAfterMs?: number;
}

/** What a run needs from the daemon. */
export interface RunDeps {
  config: ServiceConfig;
  runtime: SandboxRuntime;
  ledger: Ledger;
  results: ResultStore;
  /** Inspection hook for the run's actors (SWARM_INSPECT=1). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  log(message: string): void;
  /** Tells the daemon which run an agent belongs to, for every agent the run takes on. */
  register(agentId: string): void;
  /** The daemon's model gateway: every agent's model calls go through it. */
  gateway: ModelGateway;
  /** The daemon's admission control for sandbox and harness starts, shared by every run. */
  starts: StartQueue;
  /** Told of each attempt to reopen a harness connection (metrics). */
  onHarnessReconnect?: () => void;
}

const SESSION_STATS_TIMEOUT_MS = 2_000;
/** Events after which a held model call looks again (state, spending, caps). */
const CHANGE_TYPES: ReadonlySet<string> = new Set([
  "agent_state_changed",
  "agent_ended",
  "model_usage",
  "budget_changed",
]);

/**
 * One run and everything that is its own, all private: the supervisor actor holding its agents'
 * machines, the view folded from its ledger events, the agent table (metas, tree, budgets), the
 * typed event writer, and the collaborators that act on them (spawning, controls, drain, spend,
 * approvals), each handed only what it needs. The agent machines' effects are provided here,
 * bound to this run. Its methods are the API's operations on one run.
 */
export class Run {
  readonly #deps: RunDeps;
  readonly #view;
  readonly #table = new AgentTable();
  readonly #writer: RunWriter;
  readonly #supervisor: Supervisor;
  readonly #harness: HarnessEffect;
  readonly #spawner: Spawner;
  readonly #controls: Controls;
  readonly #drains: Drains;
  readonly #spend: Spend;
  readonly #permissions: Permissions;
  /** Recent transitions of each agent machine. */
  readonly #machines = new MachineLog((actorId) => this.#table.has(actorId));
  /** Emits `<agentId>` once the ledger has the agent's result settled or its end. */
  readonly #settled = new EventEmitter().setMaxListeners(0);
  /** Emits `change` once the ledger has a state change, a model call or new caps: what held model calls wait on. */
  readonly #changes = new EventEmitter().setMaxListeners(0);
  /** Timers the run armed (drain deadlines): cleared when it closes. */
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Set by `DELETE /runs/:runId`: approvals its agents still wait for are denied `run-deleted`. */
  #deleting = false;
  #purge: Promise<void> | undefined;
  readonly #unsubscribe: () => void;

  constructor(
    readonly runId: string,
    deps: RunDeps,
  ) {
    this.#deps = deps;
    const log = (message: string) => deps.log(`run ${runId}: ${message}`);
    const view = createRunView(runId);
    this.#view = view;
    const writer = new RunWriter(deps.ledger, runId, deps.results, deps.log);
    this.#writer = writer;
    const append = writer.append.bind(writer);
    const table = this.#table;
    const admit: Admit = (agentId, signal, start) => deps.starts.run(agentId, signal, start);
    const nextChange = (signal: AbortSignal) => once(this.#changes, "change", { signal });

    this.#harness = createHarnessEffect({
      runtime: deps.runtime,
      recordedHseq: (agentId) => this.#recordedCount(hseqKey(agentId)),
      recordedPrompts: (agentId) => this.#recordedCount(promptsKey(agentId)),
      recordPrompts: (agentId, n) => writer.put(promptsKey(agentId), String(n)),
      persist: (agentId, event) => writer.harnessEvent(agentId, event),
      publish: (agentId, event) => deps.ledger.publish(runId, { type: event.event, agentId, data: event.data }),
      hostCall: (agentId, call, signal) =>
        answerAgentCall(
          {
            policyOf: (id) => table.require(id).meta.approve ?? [],
            permissions: this.#permissions,
            supervisor: this.#supervisor,
            spawn: (request, root) => this.#spawner.spawn(request, root),
            recorded: (id) => view.agents.has(id),
            result: (id, waitSeconds, s) => this.result(id, waitSeconds, s),
          },
          agentId,
          call,
          signal,
        ),
      log: deps.log,
      admit,
      hibernateAfterMs: deps.config.hibernateAfterMs ?? 0,
      onReconnect: deps.onHarnessReconnect,
    });
    const effects = {
      ...createSandboxActors({
        runtime: deps.runtime,
        openGateway: (agentId, sandboxId) =>
          deps.gateway.open(deps.runtime.controlDir(sandboxId), this.#modelCaller(agentId)),
        closeGateway: (sandboxId) => deps.gateway.close(deps.runtime.controlDir(sandboxId)),
        plan: (input, signal) =>
          planProvision(
            {
              runId,
              table,
              whenLive: (agentId, s) => this.#supervisor.whenLive(agentId, s),
              resultOf: (agentId) => deps.results.read(agentId),
              outcomeOf: (agentId) => view.agents.get(agentId)?.outcome ?? null,
            },
            input.agentId,
            signal,
          ),
        recordEnding: async ({ agentId, ending }) => {
          await writer.put(endingKey(agentId), JSON.stringify(ending));
        },
        admit,
        log,
      }),
      harness: this.#harness.logic,
    };
    this.#supervisor = new Supervisor({
      runId,
      agent: agentMachine.provide({ actors: effects }),
      memberTimeoutMs: deps.config.memberTimeoutMs,
      onFact: (agentId, fact) => this.#record(agentId, fact),
      endedInLedger: (agentId) => {
        const state = view.agents.get(agentId)?.state;
        return state === "done" || state === "aborted" ? state : null;
      },
      // Every machine's transitions, for `GET /agents/:agentId/machine`; and the inspector's, when one is attached.
      inspect: (event) => {
        this.#machines.observe(event);
        const inspect = deps.inspect;
        if (typeof inspect === "function") inspect(event);
        else inspect?.next?.(event);
      },
      log: deps.log,
    });
    const supervisor = this.#supervisor;
    this.#controls = new Controls({
      supervisor,
      tree: table,
      flushed: () => writer.flushed(),
      releaseSandbox: async (agentId) => {
        const sandboxId = table.get(agentId)?.meta.sandboxId;
        if (sandboxId) await deps.runtime.close(sandboxId, AbortSignal.timeout(60_000)).catch(() => undefined);
      },
      subtreeSteer: (agentId, text) => subtreeSteerMessage(view.agents, (id) => supervisor.status(id), agentId, text),
    });
    this.#drains = new Drains({
      supervisor,
      tree: table,
      append,
      flushed: () => writer.flushed(),
      releaseEnded: (results) => this.#controls.releaseEnded(results),
      stopLate: async (ids) => (await this.#controls.stopLive(view.rootAgentId, ids, "drain-timeout")).length,
      timer: (fire, delayMs) => this.#timer(fire, delayMs),
      log,
    });
    this.#spend = new Spend({
      table,
      subtreeUsage: (agentId) => view.agents.get(agentId)?.subtreeUsage,
      supervisor,
      append,
      pauseForBudget: (agentId) => this.#controls.pauseForBudget(agentId),
      nextChange,
    });
    this.#permissions = new Permissions({
      requests: view.permissions,
      pendingOf: (agentId) => view.agents.get(agentId)?.pendingPermissions ?? [],
      supervisor,
      timeoutOf: (agentId) => table.require(agentId).meta.approveTimeoutMs,
      append,
      log,
    });
    this.#spawner = new Spawner({
      runId,
      table,
      recorded: (agentId) => view.agents.has(agentId),
      supervisor,
      append,
      earlierAnswer: (key) => deps.ledger.getIndex(key),
      resolveModel: (model, field) => void deps.gateway.catalog.resolve(model, field),
      harnessOutOfReach: deps.runtime.harnessOutOfReach,
      limits: deps.config.limits,
      turnMaxMs: deps.config.turnMaxMs,
      spend: this.#spend,
      drains: this.#drains,
      register: deps.register,
    });

    this.#unsubscribe = deps.ledger.subscribe(runId, (event) => {
      if (!event.persisted) return;
      foldEvent(view, event);
      if (event.type === "permission_resolved")
        this.#permissions.folded((event.data as { requestId: string }).requestId);
      // An end with an error (failed, lost, refused by a budget) is worth the operator's eye.
      if (event.type === "agent_ended") logEndWithError(log, event.agentId, event.data);
      if ((event.type === "handle_settled" || event.type === "agent_ended") && event.agentId)
        this.#settled.emit(event.agentId);
      if (CHANGE_TYPES.has(event.type)) this.#changes.emit("change");
    });
  }

  /** Whether the agent belongs to this run (recorded in its ledger). */
  has(agentId: string): boolean {
    return this.#view.agents.has(agentId);
  }

  /** Every agent of the run, as its ledger records them. */
  agentIds(): string[] {
    return [...this.#view.agents.keys()];
  }

  snapshot(): RunSnapshot {
    return runSnapshot(this.#view, this.#deps.starts.positions());
  }

  /** `GET /runs`: the run at a glance. */
  summary(): RunSummary {
    return runSummary(this.#view);
  }

  /** Its agents by state, added to `counts`. */
  countStates(counts?: Record<AgentState, number>): Record<AgentState, number> {
    return countStates(this.#view, counts);
  }

  /** The agent's machine: state value, tags and latest transitions. */
  machine(agentId: string): MachineView {
    const now = this.#supervisor.machine(agentId);
    return {
      agentId,
      running: now !== null,
      value: now?.value ?? null,
      tags: now?.tags ?? [],
      transitions: this.#machines.of(agentId),
    };
  }

  /**
   * The agent view plus `sessionStats`: asked of its harness when it answers in time and the agent
   * is running, or those it had when it last hibernated while it sleeps.
   */
  async agent(agentId: string): Promise<AgentDetail> {
    const record = this.#view.agents.get(agentId)!;
    const view: AgentDetail = { ...agentView(record), budget: this.#spend.view(agentId) };
    const place = this.#deps.starts.positions().get(agentId);
    if (place !== undefined) view.queuePosition = place;
    const stats =
      this.#supervisor.status(agentId) === "running"
        ? await this.#harness.sessionStats(agentId, SESSION_STATS_TIMEOUT_MS)
        : undefined;
    if (stats) view.sessionStats = stats;
    else if (record.hibernated && record.sleptWith) view.sessionStats = record.sleptWith;
    return view;
  }

  prompt(agentId: string, text: string): void {
    this.#supervisor.requireLive(agentId);
    this.#supervisor.requireNotDraining(agentId);
    this.#supervisor.send(agentId, { type: "prompt", text });
  }

  /** A result: settled once a turn settled or the agent ended; waits up to `waitSeconds` while pending. */
  async result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView> {
    const settled = () => {
      const record = this.#view.agents.get(agentId)!;
      return record.settled !== null || record.outcome !== null;
    };
    if (!settled() && waitSeconds > 0) {
      const timeout = AbortSignal.timeout(waitSeconds * 1000);
      await once(this.#settled, agentId, { signal: signal ? AbortSignal.any([timeout, signal]) : timeout }).catch(
        () => undefined,
      );
    }
    if (!settled()) return { agentId, state: "pending", outcome: null, resultRef: null, result: null };
    const record = this.#view.agents.get(agentId)!;
    const resultRef = record.settled?.resultRef ?? null;
    return {
      agentId,
      state: "settled",
      outcome: record.settled?.outcome ?? record.outcome,
      resultRef,
      result: resultRef ? this.#deps.results.read(agentId) : null,
    };
  }

  /** POST /runs: record the run and its root, which starts provisioning. */
  start(request: CreateRunRequest): Promise<CreateRunResponse> {
    return this.#spawner.start(request);
  }

  /** A spawn by the operator (`body`) or by an agent's `spawn_agent` (`params`). */
  spawn(request: SpawnRequest, root = "body"): Promise<SpawnResponse> {
    return this.#spawner.spawn(request, root);
  }

  /** POST /agents/:agentId/budget. */
  setBudget(agentId: string, caps: CapChange): Promise<{ agentId: string; budget: SpendView }> {
    return this.#spend.setCaps(agentId, caps);
  }

  pause(agentId: string, scope: Scope): Promise<ControlResponse> {
    return this.#controls.pause(agentId, scope);
  }

  resume(agentId: string, scope: Scope): Promise<ControlResponse> {
    return this.#controls.resume(agentId, scope);
  }

  stop(agentId: string, request: StopRequest): Promise<ControlResponse> {
    if (request.mode === "drain")
      return this.#drains.drain(agentId, request.scope, request.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
    return this.#controls.stop(agentId, request.scope);
  }

  steer(agentId: string, message: string, scope: Scope): Promise<ControlResponse & { delivery: Delivery }> {
    return this.#controls.steer(agentId, message, scope);
  }

  listPermissions(state: PermissionState | "all"): PermissionView[] {
    return this.#permissions.list(state);
  }

  resolvePermission(agentId: string, requestId: string, answer: PermissionAnswer): Promise<PermissionView> {
    return this.#permissions.resolve(agentId, requestId, answer, "operator");
  }

  /** DELETE /runs/:runId: every live agent stopped, leaves first. */
  async stopAll(): Promise<void> {
    this.#deleting = true;
    await this.#controls.stopLive(this.#view.rootAgentId, null);
  }

  /** DELETE /runs/:runId?purge=true: stopped as `stopAll` stops it, then removed for good; one purge however often asked. */
  purge(forget: () => void): Promise<void> {
    const { ledger, runtime, results, log } = this.#deps;
    // A purge that failed can be asked for again (one that failed after the drop is no longer reachable).
    this.#purge ??= purgeRun(
      {
        runId: this.runId,
        stopAll: () => this.stopAll(),
        recorded: () => this.#recordedSandboxes(),
        close: () => this.close(),
      },
      { ledger, runtime, results, log },
      forget,
    ).catch((err: unknown) => {
      this.#purge = undefined;
      throw err;
    });
    return this.#purge;
  }

  /**
   * Start-up: this run as its ledger left it. The view is folded from its events, the agent table
   * from its index; then every agent the ledger shows unended gets its actor through the path a
   * spawn takes (`Spawner.launch`), with the input `restoredAgents` makes of the fold. Sandboxes
   * of the agents given an actor are added to `kept` (the rest of the runtime's are orphans).
   */
  async restore(kept: Set<string>): Promise<void> {
    const { ledger, config, log } = this.#deps;
    for await (const event of ledger.iterate(this.runId, 0)) {
      if (event.seq > this.#view.asOf) foldEvent(this.#view, event); // later ones came through the live subscription
    }
    const index = new Map<string, IndexedAgent>();
    for (const record of this.#view.agents.values()) {
      const id = record.agentId;
      const [rawMeta, rawEnding, prompts] = await Promise.all([
        ledger.getIndex(agentKey(id)),
        ledger.getIndex(endingKey(id)),
        this.#recordedCount(promptsKey(id)),
      ]);
      const meta = rawMeta ? (JSON.parse(rawMeta) as AgentMeta) : undefined;
      // Agents recorded before grants existed get what their spec asked, within today's ceiling.
      if (meta) meta.grants ??= rootGrants({ ...meta.spec, limits: undefined }, config.limits, "spec");
      index.set(id, { meta, ending: rawEnding ? (JSON.parse(rawEnding) as Ending) : undefined, prompts });
      this.#deps.register(id);
      if (meta)
        this.#table.add(id, {
          meta,
          parentAgentId: record.parentAgentId,
          depth: record.depth,
          waitFor: record.waitFor,
        });
    }
    // Accepted spawns count against every ancestor's maxAgents (refused ones never did).
    for (const record of this.#view.agents.values())
      if (record.parentAgentId && record.outcome !== "budget-exceeded") this.#table.countSpawn(record.parentAgentId);

    for (const agent of restoredAgents(this.#view, index)) {
      if (agent.kind === "no-meta") continue;
      if (agent.settled) this.#supervisor.settled(agent.agentId);
      if (agent.kind !== "launch") continue;
      kept.add(this.#table.require(agent.agentId).meta.sandboxId);
      if (agent.start.state === "ending")
        log(
          `agent ${agent.agentId} was ending (${agent.start.ending.outcome}) when the service stopped: closing its sandbox`,
        );
      else if (agent.start.state === "provisioning")
        log(`agent ${agent.agentId} was provisioning when the service stopped: provisioning it again`);
      this.#spawner.launch(agent.agentId, agent.start, {
        prompt: agent.prompt,
        pendingPause: agent.pendingPause,
        counted: true,
      });
      // Drained before the daemon stopped but not yet started: it still never starts.
      if (agent.drain) this.#supervisor.send(agent.agentId, { type: "drain", drain: agent.drain });
    }

    // Approvals and drains under way go on: requests of agents that ended meanwhile are denied, the
    // rest keep their timeouts; drains keep their deadlines.
    for (const record of this.#view.agents.values())
      if (record.outcome !== null && record.pendingPermissions.length > 0)
        await this.#permissions.agentEnded(record.agentId, "stop");
    this.#permissions.rearm();
    this.#drains.rearm(
      [...this.#view.agents.values()].flatMap((record) =>
        record.drain && record.outcome === null ? [{ agentId: record.agentId, drain: record.drain }] : [],
      ),
    );
  }

  /** Stop the supervisor and drop the harness connections; sandboxes keep running for the next start. */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#permissions.close();
    this.#supervisor.stop();
    this.#unsubscribe();
  }

  /** The machine stated a fact: into the ledger, in order; an end also answers its pending approvals. */
  #record(agentId: string, fact: Fact): void {
    void this.#writer.fact(agentId, fact);
    if (fact.kind === "ended") void this.#permissions.agentEnded(agentId, this.#deleting ? "run-deleted" : "stop");
  }

  /** The agent as its gateway socket serves it: its model, script, budgets, metering and quiet clock. */
  #modelCaller(agentId: string): ModelCaller {
    const { spec } = this.#table.require(agentId).meta;
    const supervisor = this.#supervisor;
    return {
      agentId,
      model: spec.script ? SCRIPTED_MODEL : this.#deps.gateway.catalog.resolve(spec.model!, "spec.model"),
      script: spec.script,
      cursor: new LedgerScriptCursor(
        { getIndex: (key) => this.#deps.ledger.getIndex(key), put: (key, value) => this.#writer.put(key, value) },
        agentId,
      ),
      admit: (signal) => this.#spend.admit(agentId, signal),
      holding: (on) => supervisor.send(agentId, { type: on ? "gateway.hold" : "gateway.release" }),
      record: async (usage) => {
        await this.#writer.append([{ type: "model_usage", agentId, data: usage }]);
      },
      whenRunning: async (signal) => {
        while (supervisor.status(agentId) === "paused") await once(this.#changes, "change", { signal });
      },
    };
  }

  /** Every agent and every sandbox id the run recorded (its table's and its events'). */
  #recordedSandboxes(): { agentIds: string[]; sandboxIds: string[] } {
    const agentIds = this.agentIds();
    const sandboxIds = new Set<string>();
    for (const agentId of agentIds) {
      for (const sandboxId of [this.#table.get(agentId)?.meta.sandboxId, this.#view.agents.get(agentId)?.sandboxId])
        if (sandboxId) sandboxIds.add(sandboxId);
    }
    return { agentIds, sandboxIds: [...sandboxIds] };
  }

  /** A counter the run keeps in the ledger's index (`hseq!`, `prompts!`): 0 when absent or not a count. */
  async #recordedCount(key: string): Promise<number> {
    const n = Number(await this.#deps.ledger.getIndex(key));
    return Number.isSafeInteger(n) && n > 0 ? n : 0;
  }

  /** A timer of the run's (unref'd), cleared if the run closes first. */
  #timer(fire: () => void, delayMs: number): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        fire();
      },
      Math.max(0, delayMs),
    ).unref();
    this.#timers.add(timer);
  }
}

function logEndWithError(log: (message: string) => void, agentId: string | null, data: unknown): void {
  const { outcome, error } = (data ?? {}) as { outcome?: unknown; error?: unknown };
  if (typeof error !== "string" || error === "") return;
  log(`agent ${agentId} ended ${String(outcome)}: ${error}`);
}
