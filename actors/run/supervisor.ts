import { randomUUID } from "node:crypto";
import { createActor, type InspectionEvent, type Observer } from "xstate";
import type { agentMachine } from "../../machines/agent.machine.ts";
import type { AgentEvent, AgentInput, ControlOp, Drain, EndReason, Fact } from "../../machines/agent.types.ts";
import { holdsPendingPause, isBetweenTurns, statusOf } from "../../machines/agent-status.ts";
import {
  addAgent,
  type ControlMember,
  type MemberAnswer,
  type RunActor,
  runMachine,
  stopRun,
} from "../../machines/run.machine.ts";
import { SwarmError } from "../../src/errors.ts";
import { type AgentStatus, isLive } from "../../src/swarm-api.ts";

/** What the supervisor needs: the agent machine with its effects provided, and where its facts go. */
export interface SupervisorDeps {
  runId: string;
  /** The agent machine, its effects provided for this run. */
  agent: typeof agentMachine;
  memberTimeoutMs?: number;
  /** Every fact an agent machine states, in order. */
  onFact(agentId: string, fact: Fact): void;
  /** An agent without an actor (ended before a restart, refused by a budget): its end as the ledger has it, or null. */
  endedInLedger(agentId: string): "done" | "aborted" | null;
  /** The Stately inspector (`SWARM_INSPECT=1`), when one is attached: every event of the run's actors. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  log(message: string): void;
}

/**
 * The run supervisor actor (the run machine, holding one agent machine per live agent) and what
 * the run reads of its agents' machines: status from their tags, drains, pending pauses. Every
 * decision about a live agent is taken from here, never from a copy.
 */
export class Supervisor {
  readonly #actor: RunActor;

  constructor(private readonly deps: SupervisorDeps) {
    this.#actor = createActor(runMachine, {
      input: { runId: deps.runId, memberTimeoutMs: deps.memberTimeoutMs },
      ...(deps.inspect ? { inspect: deps.inspect } : {}),
    });
    // An actor error must never take the daemon down with it; it is logged with its run.
    this.#actor.subscribe({ error: (err) => deps.log(`run ${deps.runId}: supervisor failed: ${String(err)}`) });
    // The rest of a big wave goes out once other runs' requests, and this wave's answers, had their turn.
    this.#actor.on("control.yield", ({ requestId }) =>
      setImmediate(() => {
        // The run may have closed meanwhile: a stopped actor takes no more events.
        if (this.#actor.getSnapshot().status === "active") this.#actor.send({ type: "control.continue", requestId });
      }),
    );
    this.#actor.start();
  }

  /** Give an agent its actor; `counted`: its parent's live children already count it (a restart). */
  add(input: AgentInput, waitFor: string[], counted = false): void {
    const agent = addAgent(this.#actor, this.deps.agent, { input, waitFor, counted });
    agent.on("fact", ({ fact }) => this.deps.onFact(input.agentId, fact));
  }

  /** The agent's result settled (or it ended) without its machine saying so: what `waitFor` waits for. */
  settled(agentId: string): void {
    this.#actor.send({ type: "agent.settled", agentId });
  }

  send(agentId: string, event: AgentEvent): void {
    this.#child(agentId)?.send(event);
  }

  /** Whether the agent has an actor here. */
  holds(agentId: string): boolean {
    return this.#child(agentId) !== undefined;
  }

  /** The agent's status from its machine's tags; the ledger's end when it has no actor; null when neither knows it. */
  status(agentId: string): AgentStatus | null {
    const child = this.#child(agentId);
    return child ? statusOf(child.getSnapshot()) : this.deps.endedInLedger(agentId);
  }

  isLive(agentId: string): boolean {
    const status = this.status(agentId);
    return status !== null && isLive(status);
  }

  /** The agent's status, or 409 when it is not live. */
  requireLive(agentId: string): AgentStatus {
    const status = this.status(agentId);
    if (status === null || !isLive(status)) throw new SwarmError("AGENT_NOT_LIVE", `agent ${agentId} is not live`);
    return status;
  }

  /**
   * 409 `AGENT_BUSY` unless the agent is between turns (idle, asleep, or paused while idle): what a
   * fork and an adopt need. `what` says what the caller wanted to do.
   */
  requireBetweenTurns(agentId: string, what: string, instead: string): void {
    const child = this.#child(agentId);
    if (child && isBetweenTurns(child.getSnapshot())) return;
    throw new SwarmError(
      "AGENT_BUSY",
      `agent ${agentId} is in a turn (or starting one, or on its way to a pause): ${what} only between turns; wait for its result${instead}`,
    );
  }

  /** The drain that reached the agent, as its machine has it; null when none did (or it has no actor). */
  drainOf(agentId: string): Drain | null {
    return this.#child(agentId)?.getSnapshot().context.draining ?? null;
  }

  /** 409 when a drain reached the agent: it takes no new prompt, steer or spawn. */
  requireNotDraining(
    agentId: string,
    what = "takes no new prompt, steer or spawn, and ends once its turn settles",
  ): void {
    if (this.drainOf(agentId)) throw new SwarmError("AGENT_DRAINING", `agent ${agentId} is draining: it ${what}`);
  }

  /** Whether a subtree pause already holds the agent before its sandbox exists. */
  hasPendingPause(agentId: string): boolean {
    const child = this.#child(agentId);
    return child ? holdsPendingPause(child.getSnapshot()) : false;
  }

  /** The agent's machine as it is now: state value and tags. */
  machine(agentId: string): { value: unknown; tags: string[] } | null {
    const snapshot = this.#child(agentId)?.getSnapshot();
    return snapshot ? { value: snapshot.value, tags: [...snapshot.tags].sort() } : null;
  }

  /**
   * Resolves once the agent's sandbox exists (its machine is live), so a child can fork it; rejects
   * when the agent ends first, has no actor, or `signal` aborts.
   */
  whenLive(agentId: string, signal: AbortSignal): Promise<void> {
    const child = this.#child(agentId);
    if (!child) return Promise.reject(new Error(`parent ${agentId} ended before the fork`));
    return new Promise<void>((resolve, reject) => {
      const check = (snapshot: ReturnType<typeof child.getSnapshot>): boolean => {
        if (snapshot.hasTag("live")) resolve();
        else if (snapshot.hasTag("ending") || snapshot.status !== "active")
          reject(new Error(`parent ${agentId} ended before the fork`));
        else return false;
        return true;
      };
      if (check(child.getSnapshot())) return;
      const done = () => {
        sub.unsubscribe();
        signal.removeEventListener("abort", aborted);
      };
      const aborted = () => {
        done();
        reject(signal.reason);
      };
      const sub = child.subscribe({
        next: (snapshot) => check(snapshot) && done(),
        complete: () => {
          done();
          reject(new Error(`parent ${agentId} ended before the fork`));
        },
      });
      if (signal.aborted) return aborted();
      signal.addEventListener("abort", aborted, { once: true });
    });
  }

  /**
   * Hand a control request to the run machine and wait for every member's answer (it records a
   * member that does not answer in time as `failed`): the members of a wave together, wave after wave.
   */
  carryOut(op: ControlOp, waves: ControlMember[][], message?: string, reason?: EndReason): Promise<MemberAnswer[]> {
    waves = waves.filter((wave) => wave.length > 0);
    if (waves.length === 0) return Promise.resolve([]);
    const requestId = randomUUID();
    const done = new Promise<MemberAnswer[]>((resolve) => {
      const sub = this.#actor.on("control.done", (event) => {
        if (event.requestId !== requestId) return;
        sub.unsubscribe();
        resolve(event.results);
      });
    });
    this.#actor.send({ type: "control", request: { requestId, op, waves, message, ...(reason ? { reason } : {}) } });
    return done;
  }

  stop(): void {
    stopRun(this.#actor);
  }

  #child(agentId: string) {
    return this.#actor.getSnapshot().context.actors[agentId];
  }
}
