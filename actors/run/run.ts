import { EventEmitter, once } from "node:events";
import type { Fact } from "../../machines/agent.types.ts";
import { SwarmError } from "../../src/errors.ts";
import type { SandboxChange } from "../../src/sandbox/runtime.ts";
import {
  type AdoptRequest,
  type AdoptResponse,
  type AgentDetail,
  type AgentState,
  type CapChange,
  type ChangesView,
  type ControlResponse,
  type CreateRunResponse,
  DEFAULT_DRAIN_TIMEOUT_MS,
  type Delivery,
  type ForkRequest,
  type ForkResponse,
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
  type WaitRequest,
  type WaitResponse,
} from "../../src/swarm-api.ts";
import { agentView, countStates, createRunView, foldEvent, runSnapshot, runSummary } from "../../src/views/run-view.ts";
import { bulkTurn } from "../bulk-turn.ts";
import type { HarnessEffect } from "../effects/harness.actor.ts";
import { AgentTable } from "./agent-table.ts";
import type { Controls } from "./controls.ts";
import type { Drains } from "./drain.ts";
import type { Forks } from "./forks.ts";
import { MachineLog } from "./machine-log.ts";
import type { Permissions } from "./permissions.ts";
import { purgeRun } from "./purge.ts";
import { restoreRun } from "./restore.ts";
import { readIndex } from "./restore-plan.ts";
import { Results } from "./results.ts";
import type { RunDeps } from "./run-deps.ts";
import { assembleRun } from "./run-parts.ts";
import type { RunWriter } from "./run-writer.ts";
import type { RootPlan, Spawner } from "./spawn.ts";
import type { Spend } from "./spend.ts";
import type { Supervisor } from "./supervisor.ts";
import type { ToolRefusals } from "./tool-refusals.ts";

export type { RunDeps, ServiceConfig } from "./run-deps.ts";

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
  readonly #refusals: ToolRefusals;
  readonly #forks: Forks;
  /** Recent transitions of each agent machine. */
  readonly #machines = new MachineLog();
  readonly #results: Results;
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
    const log = (message: string, agentId?: string) => deps.log(`run ${runId}: ${message}`, { runId, agentId });
    const view = createRunView(runId);
    this.#view = view;
    this.#results = new Results(view.agents, deps.results);
    const parts = assembleRun(runId, deps, {
      view,
      table: this.#table,
      results: this.#results,
      nextChange: (signal) => once(this.#changes, "change", { signal }),
      onFact: (agentId, fact) => this.#record(agentId, fact),
      transitioned: (agentId, event, value) => this.#machines.record(agentId, event, value),
      timer: (fire, delayMs) => this.#timer(fire, delayMs),
      log,
    });
    this.#writer = parts.writer;
    this.#supervisor = parts.supervisor;
    this.#harness = parts.harness;
    this.#controls = parts.controls;
    this.#drains = parts.drains;
    this.#spend = parts.spend;
    this.#permissions = parts.permissions;
    this.#spawner = parts.spawner;
    this.#refusals = parts.refusals;
    this.#forks = parts.forks;

    this.#unsubscribe = deps.ledger.subscribe(runId, (event) => {
      if (!event.persisted) return;
      foldEvent(view, event);
      if (event.type === "permission_resolved")
        this.#permissions.folded((event.data as { requestId: string }).requestId);
      // An end with an error (failed, lost, refused by a budget) is worth the operator's eye.
      if (event.type === "agent_ended") logEndWithError(log, event.agentId, event.data);
      if ((event.type === "handle_settled" || event.type === "agent_ended") && event.agentId)
        this.#results.folded(event.agentId);
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
    const view: AgentDetail = {
      ...agentView(record),
      prompt: record.prompt,
      waitFor: [...record.waitFor],
      budget: this.#spend.view(agentId),
    };
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

  /**
   * The runtime's word on the node of one of the run's sandboxes (cluster runtime): an unreachable
   * node is recorded and holds the agent's quiet-turn clock until it answers again; a node the
   * swarm declared down (or drained) loses the agent, naming the node and why.
   */
  sandboxChanged(change: SandboxChange): void {
    const { agentId } = change;
    if (this.#table.get(agentId)?.meta.sandboxId !== change.sandboxId) return;
    if (change.type === "lost") {
      this.#supervisor.send(agentId, { type: "harness.lost", error: `agent lost: ${change.reason}` });
      return;
    }
    void this.#writer.reachability(agentId, change.node, change.type === "reachable");
    this.#supervisor.send(agentId, { type: change.type === "unreachable" ? "node.unreachable" : "node.reachable" });
  }

  /** A prompt waits while a fork or an adopt holds the agent between turns. */
  async prompt(agentId: string, text: string): Promise<void> {
    this.#supervisor.requireLive(agentId);
    this.#supervisor.requireNotDraining(agentId);
    await this.#forks.whenOpen(agentId);
    this.#supervisor.requireLive(agentId);
    this.#supervisor.send(agentId, { type: "prompt", text });
  }

  /** A result: settled once a turn settled or the agent ended; waits up to `waitSeconds` while pending. */
  result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView> {
    return this.#results.result(agentId, waitSeconds, signal);
  }

  /** POST /runs: record the run and its root (`planRoot`), which starts provisioning. */
  start(root: RootPlan): Promise<CreateRunResponse> {
    return this.#spawner.start(root);
  }

  /**
   * A spawn by the operator (`body`) or by an agent's `spawn_agent` (`params`): bulk work, so it
   * waits its turn when a burst of them has had its share of the event loop (`bulkTurn`).
   */
  async spawn(request: SpawnRequest, root = "body"): Promise<SpawnResponse> {
    await bulkTurn();
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

  /** A steer waits while a fork or an adopt holds the agent between turns (it would start a turn). */
  async steer(agentId: string, message: string, scope: Scope): Promise<ControlResponse & { delivery: Delivery }> {
    await this.#forks.whenOpen(agentId);
    return this.#controls.steer(agentId, message, scope);
  }

  fork(agentId: string, request: ForkRequest): Promise<ForkResponse> {
    return this.#forks.fork(agentId, request);
  }

  changes(agentId: string): Promise<ChangesView> {
    return this.#forks.changes(agentId);
  }

  adopt(agentId: string, request: AdoptRequest): Promise<AdoptResponse> {
    return this.#forks.adopt(agentId, request);
  }

  /** POST /runs/:runId/wait; with `stopOthers`, every listed agent still live but the winner is stopped before it answers. */
  async waitFor(request: WaitRequest, signal?: AbortSignal): Promise<WaitResponse> {
    const outside = request.agentIds.filter((id) => !this.has(id));
    if (outside.length > 0)
      throw new SwarmError(
        "INVALID_BODY",
        `body.agentIds: ${outside.join(", ")} ${outside.length === 1 ? "is not an agent" : "are not agents"} of run ${this.runId}`,
      );
    const answer = await this.#results.waitMany(request, signal);
    if (request.stopOthers) {
      const others = new Set(request.agentIds.filter((id) => id !== answer.winner));
      await this.#controls.stopLive(this.#view.rootAgentId, others);
    }
    return answer;
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
   * Answers false, restoring nothing, when the ledger shows no root agent: no run of this service's
   * making lacks one, and such a remnant is not shown as a run created at the epoch.
   */
  async restore(kept: Set<string>): Promise<boolean> {
    const { ledger, config, log } = this.#deps;
    for await (const event of ledger.iterate(this.runId, 0)) {
      if (event.seq > this.#view.asOf) foldEvent(this.#view, event); // later ones came through the live subscription
    }
    if (!this.#view.agents.has(this.#view.rootAgentId)) return false;
    const index = await readIndex(ledger, this.#view, config.limits);
    const sandboxes = await restoreRun({
      view: this.#view,
      index,
      table: this.#table,
      supervisor: this.#supervisor,
      launch: (agentId, start, options) => this.#spawner.launch(agentId, start, options),
      register: (agentId) => this.#deps.directory.add(agentId, this.runId),
      permissions: this.#permissions,
      drains: this.#drains,
      log: (message) => log(`run ${this.runId}: ${message}`, { runId: this.runId }),
    });
    for (const sandboxId of sandboxes) kept.add(sandboxId);
    return true;
  }

  /** Stop the supervisor and drop the harness connections; sandboxes keep running for the next start. */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#refusals.close();
    this.#permissions.close();
    this.#supervisor.stop();
    this.#unsubscribe();
  }

  /** The machine stated a fact: into the ledger, in order; an end also answers its pending approvals. */
  #record(agentId: string, fact: Fact): void {
    void this.#writer.fact(agentId, fact);
    if (fact.kind === "ended") void this.#permissions.agentEnded(agentId, this.#deleting ? "run-deleted" : "stop");
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

function logEndWithError(
  log: (message: string, agentId?: string) => void,
  agentId: string | null,
  data: unknown,
): void {
  const { outcome, error } = (data ?? {}) as { outcome?: unknown; error?: unknown };
  if (typeof error !== "string" || error === "") return;
  log(`agent ${agentId} ended ${String(outcome)}: ${error}`, agentId ?? undefined);
}
