import { EventEmitter } from "node:events";
import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import type { agentMachine } from "../machines/agent.machine.ts";
import type { AgentInput, Fact } from "../machines/agent.types.ts";
import type { Budget } from "../machines/budget.ts";
import { runMachine } from "../machines/run.machine.ts";
import type { HarnessClient } from "../src/harness/client.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import type { ResultStore } from "../src/results/result-store.ts";
import type { SandboxLimits, SandboxRuntime } from "../src/sandbox/runtime.ts";
import type { AgentSpec } from "../src/spec/agent-spec.ts";
import type { Grants } from "../src/spec/grants.ts";
import { applyEvent, createRunView, type RunView } from "../src/views/run-view.ts";
import { factEvents, promptsKey } from "./fact-tap.ts";

export interface ServiceConfig {
  dataDir: string;
  /** Quiet-turn limit (SWARM_TURN_MAX_MS). */
  turnMaxMs: number;
  /** The most any sandbox gets (SWARM_LIMIT_*): the ceiling of every run's root. */
  limits: SandboxLimits;
}

/** What swarmd remembers of an agent beyond its ledger events (kept in the ledger's index). */
export interface AgentMeta {
  runId: string;
  /** Chosen at spawn and recorded before provisioning, so a crash mid-provision can be reconciled. */
  sandboxId: string;
  spec: AgentSpec;
  /** What its sandbox was given: the spec's asks within its parent's (or the daemon's) grants. */
  grants: Grants;
  budget: Budget;
  keepAlive: boolean;
}

/** One run: its supervisor actor, its ledger fold and its spawn bookkeeping. */
export interface RunHandle {
  runId: string;
  actor: Actor<typeof runMachine>;
  view: RunView;
  meta: Map<string, AgentMeta>;
  /** Accepted spawns under each agent (all descendants, ended ones included). */
  descendants: Record<string, number>;
  /** The newest ledger write of this run; awaited so answers reflect what they did. */
  tail: Promise<unknown>;
  unsubscribe: () => void;
}

/** State shared by the service's parts (spawn, controls, host calls, queries). */
export interface ServiceCore {
  config: ServiceConfig;
  runtime: SandboxRuntime;
  ledger: Ledger;
  results: ResultStore;
  runs: Map<string, RunHandle>;
  /** agentId → runId for every agent of every known run. */
  agentRuns: Map<string, string>;
  clients: Map<string, HarnessClient>;
  /** Emits `settled:<agentId>` once an agent's result is settled or it ended (after the ledger has it). */
  waiters: EventEmitter;
  agentLogic: typeof agentMachine;
  /** Inspection hook for every run actor and its agents (SWARM_INSPECT=1). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  log(message: string): void;
}

export function createWaiters(): EventEmitter {
  const waiters = new EventEmitter();
  waiters.setMaxListeners(0);
  return waiters;
}

/** Open a run: fold its ledger events as they commit and start its supervisor. */
export function openRun(core: ServiceCore, runId: string): RunHandle {
  const view = createRunView(runId);
  const unsubscribe = core.ledger.subscribe(runId, (event) => {
    if (!event.persisted) return;
    applyEvent(view, event);
    if ((event.type === "handle_settled" || event.type === "agent_ended") && event.agentId) core.waiters.emit(`settled:${event.agentId}`);
  });
  const actor = createActor(runMachine.provide({ actors: { agent: core.agentLogic } }), { input: { runId }, inspect: core.inspect });
  const run: RunHandle = { runId, actor, view, meta: new Map(), descendants: {}, tail: Promise.resolve(), unsubscribe };
  core.runs.set(runId, run);
  // An actor error must never take the daemon down with it; it is logged with its run.
  actor.subscribe({ error: (err) => core.log(`run ${runId}: supervisor failed: ${String(err)}`) });
  actor.start();
  return run;
}

/** Append events to the run's ledger in call order, remembering the write as the run's tail. */
export function appendToRun(
  core: ServiceCore,
  run: RunHandle,
  events: Array<{ type: string; agentId: string | null; data: Record<string, unknown> }>,
  put: Array<{ key: string; value: string }> = [],
): Promise<unknown> {
  const write = core.ledger.append(run.runId, events, put.length > 0 ? { put } : undefined);
  run.tail = write.catch((err: unknown) => core.log(`ledger write failed for ${run.runId}: ${String(err)}`));
  return write;
}

/** Start an agent actor under the run's supervisor and record its facts in the ledger. */
export function addAgent(core: ServiceCore, run: RunHandle, input: AgentInput, parentAgentId: string | null, waitFor: string[], restored = false): void {
  core.agentRuns.set(input.agentId, run.runId);
  run.actor.send({ type: "agent.add", input, parentAgentId, waitFor, restored });
  const child = run.actor.getSnapshot().children[input.agentId];
  child?.on("fact", ({ agentId, fact }) => recordFact(core, run, agentId, fact));
}

function recordFact(core: ServiceCore, run: RunHandle, agentId: string, fact: Fact): void {
  const { events, put } = factEvents(agentId, fact, core.results, Date.now());
  void appendToRun(core, run, events, put);
  if (fact.kind === "settled") run.actor.send({ type: "agent.settled", agentId });
  if (fact.kind === "ended") run.actor.send({ type: "agent.ended", agentId });
}

/** Prompts the agent's harness acknowledged over its life, as recorded in the ledger (0 when none). */
export async function recordedPrompts(core: ServiceCore, agentId: string): Promise<number> {
  const count = Number(await core.ledger.getIndex(promptsKey(agentId)));
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}

/** Record that the agent's harness has acknowledged `count` prompts in all (in ledger order with its events). */
export async function recordPrompts(core: ServiceCore, runId: string, agentId: string, count: number): Promise<void> {
  const run = core.runs.get(runId);
  if (run) await appendToRun(core, run, [], [{ key: promptsKey(agentId), value: String(count) }]);
}
