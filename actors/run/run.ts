import { EventEmitter, once } from "node:events";
import { type Actor, createActor, type InspectionEvent, type Observer } from "xstate";
import { agentMachine } from "../../machines/agent.machine.ts";
import type { AgentInput, Drain, Fact, PausedBy, RestoredLive, StartState } from "../../machines/agent.types.ts";
import { holdsPendingPause, statusOf } from "../../machines/agent-status.ts";
import { runMachine } from "../../machines/run.machine.ts";
import { SwarmError } from "../../src/errors.ts";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import type { ModelCaller } from "../../src/gateway/model-caller.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import type { HarnessClient } from "../../src/harness/client.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { endingKey, hseqKey, promptsKey } from "../../src/ledger/ledger-keys.ts";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { SandboxLimits, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import {
  type AgentDetail,
  type AgentStatus,
  type CapChange,
  type ControlResponse,
  type CreateRunRequest,
  type CreateRunResponse,
  DEFAULT_DRAIN_TIMEOUT_MS,
  type Delivery,
  isLive,
  type MachineView,
  type PermissionAnswer,
  type PermissionState,
  type PermissionView,
  type ResultView,
  type Scope,
  type SpawnRequest,
  type SpawnResponse,
  type SpendView,
  type StopRequest,
} from "../../src/swarm-api.ts";
import { agentView, createRunView, foldEvent, type RunView, runSnapshot } from "../../src/views/run-view.ts";
import { createHarnessActor } from "../effects/harness.actor.ts";
import { HarnessHolds } from "../effects/harness-holds.ts";
import { createSandboxActors } from "../effects/sandbox.actors.ts";
import type { Admit, StartQueue } from "../start-queue.ts";
import { answerAgentCall } from "./agent-calls.ts";
import { type AgentEntry, AgentIndex } from "./agent-index.ts";
import { pause, resume, steer, stop, stopAll } from "./controls.ts";
import { drain } from "./drain.ts";
import { MachineLog } from "./machine-log.ts";
import { Permissions } from "./permissions.ts";
import { planProvision } from "./provision-plan.ts";
import { purgeRun } from "./purge.ts";
import { restoreRun, type Sandboxes } from "./restore.ts";
import { RunWriter } from "./run-writer.ts";
import { LedgerScriptCursor } from "./script-cursor.ts";
import { spawnAgent, startRun } from "./spawn.ts";
import { admitCall, setSpendCaps, spendView } from "./spend.ts";

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
  /** Told of every agent the run takes on, so the service can find the run by agent id. */
  onAgent(agentId: string): void;
  /** The daemon's model gateway: every agent's model calls go through it. */
  gateway: ModelGateway;
  /** The daemon's admission control for sandbox and harness starts, shared by every run. */
  starts: StartQueue;
  /** Told of each attempt to reopen a harness connection (metrics). */
  onHarnessReconnect?: () => void;
}

/** How an agent's actor begins: new (`start`), or live again after a restart (`restored`). */
export type AgentStart = { start: StartState; prompt?: string; pendingPause?: PausedBy } | { restored: RestoredLive };

const SESSION_STATS_TIMEOUT_MS = 2_000;
/** Events after which a held model call looks again (state, spending, caps). */
const CHANGE_TYPES: ReadonlySet<string> = new Set([
  "agent_state_changed",
  "agent_ended",
  "model_usage",
  "budget_changed",
]);

/**
 * One run and everything that is its own: the supervisor actor holding its agents' machines, the
 * view folded from its ledger events, the agent index (metas, tree, budgets), the typed event
 * writer and its harness connections. The agent machines' side effects are provided here, so each
 * reaches its own run without a lookup. Spawning, controls and restore are its methods; their
 * bodies live in their own modules (`spawn.ts`, `controls.ts`, `restore.ts`).
 */
export class Run {
  readonly view: RunView;
  readonly agents = new AgentIndex();
  readonly writer: RunWriter;
  readonly actor: Actor<typeof runMachine>;
  /** Live harness connections by agent, for `sessionStats`. */
  readonly #clients = new Map<string, HarnessClient>();
  /** Paused agents, whose hibernated harness stays asleep until they are resumed. */
  readonly #holds = new HarnessHolds();
  /** Emits `<agentId>` once the ledger has the agent's result settled or its end. */
  readonly #settled = new EventEmitter().setMaxListeners(0);
  /** Emits `change` once the ledger has a state change, a model call or new caps: what held model calls wait on. */
  readonly changes = new EventEmitter().setMaxListeners(0);
  /** Agents whose subtree is being paused for a spend cap now (one pause, however many calls are held). */
  readonly budgetPausing = new Set<string>();
  /** The run's approval inbox. */
  readonly permissions: Permissions;
  /** Timers the run armed (drain deadlines): cleared when it closes. */
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Recent transitions of each agent machine. */
  readonly #machines = new MachineLog((actorId) => this.agents.has(actorId));
  /** Set by `DELETE /runs/:runId`: approvals its agents still wait for are denied `run-deleted`. */
  #deleting = false;
  readonly #unsubscribe: () => void;

  constructor(
    readonly runId: string,
    readonly deps: RunDeps,
  ) {
    this.view = createRunView(runId);
    this.writer = new RunWriter(deps.ledger, runId, deps.results, deps.log);
    this.permissions = new Permissions(this);
    this.#unsubscribe = deps.ledger.subscribe(runId, (event) => {
      if (!event.persisted) return;
      foldEvent(this.view, event);
      if (event.type === "permission_resolved")
        this.permissions.folded((event.data as { requestId: string }).requestId);
      // An end with an error (failed, lost, refused by a budget) is worth the operator's eye.
      if (event.type === "agent_ended") logEndWithError(deps.log, runId, event.agentId, event.data);
      if ((event.type === "handle_settled" || event.type === "agent_ended") && event.agentId)
        this.#settled.emit(event.agentId);
      if (CHANGE_TYPES.has(event.type)) this.changes.emit("change");
    });
    const agentLogic = agentMachine.provide({ actors: this.#effects() });
    this.actor = createActor(runMachine.provide({ actors: { agent: agentLogic } }), {
      input: { runId, memberTimeoutMs: deps.config.memberTimeoutMs },
      // Every machine's transitions, for `GET /agents/:agentId/machine`; and the inspector's, when one is attached.
      inspect: (event) => {
        this.#machines.observe(event);
        const inspect = deps.inspect;
        if (typeof inspect === "function") inspect(event);
        else inspect?.next?.(event);
      },
    });
    // An actor error must never take the daemon down with it; it is logged with its run.
    this.actor.subscribe({ error: (err) => deps.log(`run ${runId}: supervisor failed: ${String(err)}`) });
    this.actor.start();
  }

  /** The agent machines' effects, bound to this run. */
  #effects() {
    const { runtime, ledger, log, gateway, starts } = this.deps;
    const admit: Admit = (agentId, signal, start) => starts.run(agentId, signal, start);
    return {
      ...createSandboxActors({
        runtime,
        openGateway: (agentId, sandboxId) => gateway.open(runtime.controlDir(sandboxId), this.modelCaller(agentId)),
        closeGateway: (sandboxId) => gateway.close(runtime.controlDir(sandboxId)),
        plan: (input, signal) => planProvision(this, input.agentId, signal),
        recordEnding: async ({ agentId, ending }) => {
          await this.writer.put(endingKey(agentId), JSON.stringify(ending));
        },
        admit,
        holds: this.#holds,
      }),
      harness: createHarnessActor({
        runtime,
        clients: this.#clients,
        recordedHseq: (agentId) => this.recordedCount(hseqKey(agentId)),
        recordedPrompts: (agentId) => this.recordedCount(promptsKey(agentId)),
        recordPrompts: (agentId, n) => this.writer.put(promptsKey(agentId), String(n)),
        persist: (agentId, event) => this.writer.harnessEvent(agentId, event),
        publish: (agentId, event) => ledger.publish(this.runId, { type: event.event, agentId, data: event.data }),
        hostCall: (agentId, call, signal) => answerAgentCall(this, agentId, call, signal),
        log,
        admit,
        holds: this.#holds,
        hibernateAfterMs: this.deps.config.hibernateAfterMs ?? 0,
        recordSleep: (agentId, sessionStats) =>
          this.writer.append([{ type: "agent_hibernated", agentId, data: { sessionStats } }]),
        recordWake: (agentId) => this.writer.append([{ type: "agent_woke", agentId, data: {} }]),
        onReconnect: this.deps.onHarnessReconnect,
      }),
    };
  }

  /** The agent as its gateway socket serves it: its model, script, budgets, metering and quiet clock. */
  modelCaller(agentId: string): ModelCaller {
    const { spec } = this.agents.require(agentId).meta;
    return {
      agentId,
      model: spec.script ? SCRIPTED_MODEL : this.deps.gateway.catalog.resolve(spec.model!, "spec.model"),
      script: spec.script,
      cursor: new LedgerScriptCursor(this, agentId),
      admit: (signal) => admitCall(this, agentId, signal),
      holding: (on) =>
        this.actor.getSnapshot().children[agentId]?.send({ type: on ? "gateway.hold" : "gateway.release" }),
      record: async (usage) => {
        await this.writer.append([{ type: "model_usage", agentId, data: usage }]);
      },
      whenRunning: async (signal) => {
        while (this.status(agentId) === "paused") await once(this.changes, "change", { signal });
      },
    };
  }

  /** A counter the run keeps in the ledger's index (`hseq!`, `prompts!`): 0 when absent or not a count. */
  async recordedCount(key: string): Promise<number> {
    const n = Number(await this.deps.ledger.getIndex(key));
    return Number.isSafeInteger(n) && n > 0 ? n : 0;
  }

  /** Take an agent into the run's index, and tell the service where to find it. */
  track(agentId: string, entry: AgentEntry): void {
    this.agents.add(agentId, entry);
    this.deps.onAgent(agentId);
  }

  /**
   * Give an agent its actor under the supervisor: a new one, or one the ledger shows live after a
   * restart. The one way agents get an actor; `restoring` says the parent's count already has it.
   */
  addAgent(agentId: string, how: AgentStart, restoring = false): void {
    const { meta, parentAgentId, waitFor } = this.agents.require(agentId);
    const base = {
      agentId,
      runId: this.runId,
      sandboxId: meta.sandboxId,
      keepAlive: meta.keepAlive,
      turnMaxMs: this.deps.config.turnMaxMs,
    };
    const input: AgentInput = "restored" in how ? { ...base, restored: how.restored } : { ...base, ...how };
    if ("restored" in how) this.agents.sandboxReady(agentId, meta.sandboxId);
    if ("restored" in how && how.restored.pausedBy !== null) this.#holds.hold(agentId);
    this.actor.send({
      type: "agent.add",
      input,
      parentAgentId,
      waitFor: "restored" in how ? [] : waitFor,
      counted: restoring,
    });
    this.actor.getSnapshot().children[agentId]?.on("fact", ({ fact }) => this.#record(agentId, fact));
  }

  #record(agentId: string, fact: Fact): void {
    void this.writer.fact(agentId, fact);
    if (fact.kind === "provisioned") this.agents.sandboxReady(agentId, fact.sandboxId);
    if (fact.kind === "ended") {
      this.agents.sandboxGone(agentId);
      void this.permissions.agentEnded(agentId, this.#deleting ? "run-deleted" : "stop");
    }
  }

  /** The drain that reached the agent, as its machine has it; null when none did (or it has no actor). */
  drainOf(agentId: string): Drain | null {
    return this.actor.getSnapshot().children[agentId]?.getSnapshot().context.draining ?? null;
  }

  /** 409 when a drain reached the agent: it takes no new prompt, steer or spawn. */
  requireNotDraining(agentId: string): void {
    if (this.drainOf(agentId))
      throw new SwarmError(
        "AGENT_DRAINING",
        `agent ${agentId} is draining: it takes no new prompt, steer or spawn, and ends once its turn settles`,
      );
  }

  /** A timer of the run's (unref'd), cleared if the run closes first. */
  timer(fire: () => void, delayMs: number): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        fire();
      },
      Math.max(0, delayMs),
    ).unref();
    this.#timers.add(timer);
  }

  /** The agent's status from its machine's tags; `null` when the run holds no actor for it and the ledger shows no end. */
  status(agentId: string): AgentStatus | null {
    const child = this.actor.getSnapshot().children[agentId];
    if (child) return statusOf(child.getSnapshot());
    const state = this.view.agents.get(agentId)?.state;
    return state === "done" || state === "aborted" ? state : null;
  }

  /** The agent's status, or 409 when it is not live. */
  requireLive(agentId: string): AgentStatus {
    const status = this.status(agentId);
    if (status === null || !isLive(status)) throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
    return status;
  }

  /** Whether a subtree pause already holds the agent before its sandbox exists. */
  hasPendingPause(agentId: string): boolean {
    const child = this.actor.getSnapshot().children[agentId];
    return child ? holdsPendingPause(child.getSnapshot()) : false;
  }

  /** Whether the agent belongs to this run (recorded in its ledger). */
  has(agentId: string): boolean {
    return this.view.agents.has(agentId);
  }

  snapshot() {
    return runSnapshot(this.view, this.deps.starts.positions());
  }

  /** The agent's machine: state value, tags and latest transitions. */
  machine(agentId: string): MachineView {
    const child = this.actor.getSnapshot().children[agentId];
    const snapshot = child?.getSnapshot();
    return {
      agentId,
      running: child !== undefined,
      value: snapshot?.value ?? null,
      tags: snapshot ? [...snapshot.tags].sort() : [],
      transitions: this.#machines.of(agentId),
    };
  }

  /**
   * The agent view plus `sessionStats`: asked of its harness when it answers in time and the agent
   * is running, or those it had when it last hibernated while it sleeps.
   */
  async agent(agentId: string): Promise<AgentDetail> {
    const record = this.view.agents.get(agentId)!;
    const view: AgentDetail = { ...agentView(record), budget: spendView(this, agentId) };
    const place = this.deps.starts.positions().get(agentId);
    if (place !== undefined) view.queuePosition = place;
    const client = this.#clients.get(agentId);
    if (client && this.status(agentId) === "running") {
      const stats = await client
        .request({ type: "get_session_stats" }, SESSION_STATS_TIMEOUT_MS)
        .catch(() => undefined);
      if (stats && typeof stats === "object") view.sessionStats = stats as Record<string, unknown>;
    } else if (record.hibernated && record.sleptWith) {
      view.sessionStats = record.sleptWith;
    }
    return view;
  }

  prompt(agentId: string, text: string): void {
    this.requireLive(agentId);
    this.requireNotDraining(agentId);
    this.actor.getSnapshot().children[agentId]?.send({ type: "prompt", text });
  }

  /** A result: settled once a turn settled or the agent ended; waits up to `waitSeconds` while pending. */
  async result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView> {
    const settled = () => {
      const record = this.view.agents.get(agentId)!;
      return record.settled !== null || record.outcome !== null;
    };
    if (!settled() && waitSeconds > 0) {
      const timeout = AbortSignal.timeout(waitSeconds * 1000);
      await once(this.#settled, agentId, { signal: signal ? AbortSignal.any([timeout, signal]) : timeout }).catch(
        () => undefined,
      );
    }
    if (!settled()) return { agentId, state: "pending", outcome: null, resultRef: null, result: null };
    const record = this.view.agents.get(agentId)!;
    const resultRef = record.settled?.resultRef ?? null;
    return {
      agentId,
      state: "settled",
      outcome: record.settled?.outcome ?? record.outcome,
      resultRef,
      result: resultRef ? this.deps.results.read(agentId) : null,
    };
  }

  /** POST /runs: record the run and its root, which starts provisioning. */
  start(request: CreateRunRequest): Promise<CreateRunResponse> {
    return startRun(this, request);
  }

  /** A spawn by the operator (`body`) or by an agent's `spawn_agent` (`params`). */
  spawn(request: SpawnRequest, root = "body"): Promise<SpawnResponse> {
    return spawnAgent(this, request, root);
  }

  /** POST /agents/:agentId/budget. */
  setBudget(agentId: string, caps: CapChange): Promise<{ agentId: string; budget: SpendView }> {
    return setSpendCaps(this, agentId, caps);
  }

  pause(agentId: string, scope: Scope): Promise<ControlResponse> {
    return pause(this, agentId, scope);
  }

  resume(agentId: string, scope: Scope): Promise<ControlResponse> {
    return resume(this, agentId, scope);
  }

  stop(agentId: string, request: StopRequest): Promise<ControlResponse> {
    if (request.mode === "drain")
      return drain(this, agentId, request.scope, request.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
    return stop(this, agentId, request.scope);
  }

  listPermissions(state: PermissionState | "all"): PermissionView[] {
    return this.permissions.list(state);
  }

  resolvePermission(agentId: string, requestId: string, answer: PermissionAnswer): Promise<PermissionView> {
    return this.permissions.resolve(agentId, requestId, answer, "operator");
  }

  steer(agentId: string, message: string, scope: Scope): Promise<ControlResponse & { delivery: Delivery }> {
    return steer(this, agentId, message, scope);
  }

  /** DELETE /runs/:runId: every live agent stopped, leaves first. */
  stopAll(): Promise<void> {
    this.#deleting = true;
    return stopAll(this);
  }

  #purge: Promise<void> | undefined;
  /** DELETE /runs/:runId?purge=true: stopped as `stopAll` stops it, then removed for good; one purge however often asked. */
  purge(forget: () => void): Promise<void> {
    // A purge that failed can be asked for again (one that failed after the drop is no longer reachable).
    this.#purge ??= purgeRun(this, forget).catch((err: unknown) => {
      this.#purge = undefined;
      throw err;
    });
    return this.#purge;
  }

  /** Start-up: this run as its ledger left it, live agents back on their sandboxes. */
  restore(sandboxes: Sandboxes, log: (message: string) => void): Promise<void> {
    return restoreRun(this, sandboxes, log);
  }

  /** Stop the supervisor and drop the harness connections; sandboxes keep running for the next start. */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.permissions.close();
    this.actor.stop();
    this.#unsubscribe();
    for (const client of this.#clients.values()) client.close();
  }
}

function logEndWithError(log: (message: string) => void, runId: string, agentId: string | null, data: unknown): void {
  const { outcome, error } = (data ?? {}) as { outcome?: unknown; error?: unknown };
  if (typeof error !== "string" || error === "") return;
  log(`run ${runId}: agent ${agentId} ended ${String(outcome)}: ${error}`);
}
