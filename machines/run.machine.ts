import { type ActorRefFrom, assign, createActor, emit, enqueueActions, setup } from "xstate";
import type { MemberResult } from "../src/swarm-api.ts";
import type { agentMachine } from "./agent.machine.ts";
import type { AgentEvent, AgentInput, ControlOp, Delivery, EndReason, MemberReply, PausedBy } from "./agent.types.ts";

/** One member of a control request. */
export interface ControlMember {
  agentId: string;
  by: PausedBy;
}

export interface ControlRequest {
  requestId: string;
  op: ControlOp;
  /**
   * The members in waves, in the order the cascade must visit them (one depth of the subtree
   * each: parents first for a pause, leaves first for stop and resume). Every member of a wave gets
   * the control together; the next wave starts once each of them answered.
   */
  waves: ControlMember[][];
  message?: string;
  /** A stop's reason, when it is not the operator's abort (a drain past its deadline). */
  reason?: EndReason;
}

/** One member's answer as the supervisor collected it: the API's member result and, for a steer, its delivery. */
export interface MemberAnswer extends MemberResult {
  delivery?: Delivery;
}

/** How long the supervisor waits for one member's answer unless told otherwise. */
export const DEFAULT_MEMBER_TIMEOUT_MS = 60_000;

/** The agent machine with its effects provided: what a run makes its agents' actors from. */
export type AgentLogic = typeof agentMachine;
export type AgentRef = ActorRefFrom<AgentLogic>;

export type RunEvent =
  /** `counted`: re-added after a restart, so its parent's restored `liveChildren` already counts it. */
  | { type: "agent.add"; agent: AgentRef; input: AgentInput; waitFor: string[]; counted?: boolean }
  | { type: "agent.settled"; agentId: string }
  | { type: "agent.ended"; agentId: string; parentAgentId: string | null }
  | { type: "control"; request: ControlRequest }
  /** The answer to `control.yield`: send the wave's next chunk. */
  | { type: "control.continue"; requestId: string }
  /** The run closes: every agent actor is stopped, as XState stops a parent's `children` (`stopRun`). */
  | { type: "run.close" }
  | MemberReply;

export type RunEmitted =
  | { type: "control.done"; requestId: string; results: MemberAnswer[] }
  /**
   * A chunk of a wave was sent and more of it is left: whoever runs the machine sends
   * `control.continue` once other work had its turn (a 10,000-member wave sent in one step held the
   * daemon's event loop for seconds, and every other run's requests with it).
   */
  | { type: "control.yield"; requestId: string };

/** How many members of a wave are sent in one step unless told otherwise. */
export const DEFAULT_WAVE_CHUNK = 100;

interface RunContext {
  runId: string;
  /** How long one member may take to answer before it is recorded `failed` and the cascade moves on. */
  memberTimeoutMs: number;
  /** How many members of a wave are sent in one step before the machine yields (`control.yield`). */
  waveChunk: number;
  /**
   * The run's agent actors, by agentId. Agents restored already ended, or refused by a budget, have
   * none. Held here, not in XState's `children`: see `addAgent`.
   */
  actors: Record<string, AgentRef>;
  /** Agents whose result settled or that ended: what `waitFor` waits for. */
  settled: Record<string, true>;
  /** Spawning agents and the agents they still wait for. */
  waiting: Record<string, string[]>;
  queue: ControlRequest[];
  current: Cascade | null;
}

/** The request being carried out. Its fields change in place, one answer at a time (see `actors`). */
interface Cascade {
  request: ControlRequest;
  /** The next wave to send (or the one being sent, while `sent` > 0). */
  wave: number;
  /** How many members of the wave `wave` were sent so far. */
  sent: number;
  /** Members of the wave sent last that have not answered yet: agentId → their place in `results`. */
  pending: Record<string, number>;
  /** How many those are (counted, as enumerating `pending` after each answer made a wave quadratic). */
  unanswered: number;
  /** One answer per member, in the order of the request's waves. */
  results: MemberAnswer[];
}

const cascade = (request: ControlRequest): Cascade => ({
  request,
  wave: 0,
  sent: 0,
  pending: {},
  unanswered: 0,
  results: [],
});

/** What the agent is sent for its part of the request. */
function controlEvent(request: ControlRequest, member: ControlMember): AgentEvent {
  switch (request.op) {
    case "pause":
      return { type: "control.pause", requestId: request.requestId, by: member.by };
    case "resume":
      return { type: "control.resume", requestId: request.requestId };
    case "stop":
      return {
        type: "control.stop",
        requestId: request.requestId,
        ...(request.reason ? { reason: request.reason } : {}),
      };
    case "steer":
      return { type: "control.steer", requestId: request.requestId, message: request.message ?? "" };
  }
}

/**
 * The run supervisor: owns the run's agent actors, starts `waitFor` children when their
 * dependencies settle, tells parents when children end, and carries out control requests one at a
 * time. A cascade is a state that sends to every member of one wave (one depth of the subtree),
 * waits for each of their answers, then moves to the next wave, so the order of the waves (parents
 * first for pause, leaves first for stop and resume) is the order things happen in between depths.
 */
export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as { runId: string; memberTimeoutMs?: number; waveChunk?: number },
    events: {} as RunEvent,
    emitted: {} as RunEmitted,
  },
  delays: {
    memberTimeout: ({ context }) => context.memberTimeoutMs,
  },
  guards: {
    cascadeDone: ({ context }) => !context.current || context.current.wave >= context.current.request.waves.length,
    waveAnswered: ({ context }) => !context.current || (context.current.sent === 0 && context.current.unanswered === 0),
    continuesCurrent: ({ context, event }) =>
      event.type === "control.continue" &&
      event.requestId === context.current?.request.requestId &&
      context.current.sent > 0,
    hasQueued: ({ context }) => context.queue.length > 0,
    answersCurrent: ({ context, event }) =>
      event.type === "member.reply" &&
      event.requestId === context.current?.request.requestId &&
      context.current.pending[event.agentId] !== undefined,
  },
  actions: {
    // A wave of 10,000 members is sent, and answered, without copying the cascade per member. It
    // is sent a chunk at a time; between two chunks the machine yields, and answers of the members
    // sent so far are recorded meanwhile. The wave counts as answered only once all of it was sent.
    sendChunk: enqueueActions(({ context, enqueue }) => {
      const current = context.current!;
      const { request } = current;
      const wave = request.waves[current.wave] ?? [];
      const end = Math.min(wave.length, current.sent + context.waveChunk);
      for (const member of wave.slice(current.sent, end)) {
        const place = current.results.length;
        // An agent without an actor has ended: it answers like every ended agent, `noop`.
        current.results.push({ agentId: member.agentId, outcome: "noop" });
        if (!context.actors[member.agentId]) continue;
        current.pending[member.agentId] = place;
        current.unanswered++;
        enqueue.sendTo(context.actors[member.agentId]!, controlEvent(request, member));
      }
      if (end < wave.length) {
        current.sent = end;
        enqueue.emit({ type: "control.yield", requestId: request.requestId });
        return;
      }
      current.sent = 0;
      current.wave++;
    }),
    recordAnswer: enqueueActions(({ context, event }) => {
      if (event.type !== "member.reply") return;
      const current = context.current!;
      const { agentId, outcome, error, delivery } = event;
      current.results[current.pending[agentId]!] = {
        agentId,
        outcome,
        ...(error ? { error } : {}),
        ...(delivery ? { delivery } : {}),
      };
      delete current.pending[agentId];
      current.unanswered--;
    }),
    // A member that never answers (an effect that hangs, a lost reply) must not hang the run and
    // every later control: past the timeout it is recorded `failed` and the cascade goes on.
    failUnanswered: enqueueActions(({ context }) => {
      const current = context.current!;
      for (const [agentId, place] of Object.entries(current.pending)) {
        const error = `no answer from agent ${agentId} within ${context.memberTimeoutMs} ms`;
        current.results[place] = { agentId, outcome: "failed", error };
      }
      current.pending = {};
      current.unanswered = 0;
    }),
    releaseReady: enqueueActions(({ context, enqueue }) => {
      const ready = Object.entries(context.waiting).filter(([, deps]) => deps.every((dep) => context.settled[dep]));
      if (ready.length === 0) return;
      const waiting = { ...context.waiting };
      for (const [agentId] of ready) {
        delete waiting[agentId];
        enqueue.sendTo(context.actors[agentId]!, { type: "deps.settled" });
      }
      enqueue.assign({ waiting });
    }),
  },
}).createMachine({
  id: "run",
  context: ({ input }) => ({
    runId: input.runId,
    memberTimeoutMs: input.memberTimeoutMs ?? DEFAULT_MEMBER_TIMEOUT_MS,
    waveChunk: Math.max(1, input.waveChunk ?? DEFAULT_WAVE_CHUNK),
    actors: {},
    settled: {},
    waiting: {},
    queue: [],
    current: null,
  }),
  on: {
    "agent.add": {
      actions: [
        enqueueActions(({ context, event, enqueue }) => {
          // `actors` only grows, one key per agent: it is extended in place, as a copy
          // per spawn made a 10,000-agent run quadratic (nothing keeps an older snapshot's maps).
          context.actors[event.input.agentId] = event.agent;
          if (event.input.start.state === "spawning")
            enqueue.assign({ waiting: { ...context.waiting, [event.input.agentId]: event.waitFor } });
          const parent = event.input.parentAgentId;
          const parentActor = parent ? context.actors[parent] : undefined;
          if (parentActor && !event.counted) enqueue.sendTo(parentActor, { type: "child.spawned" });
        }),
        "releaseReady",
      ],
    },
    // `settled` only grows too, and is marked in place for the same reason.
    "agent.settled": {
      actions: [
        enqueueActions(({ context, event }) => {
          context.settled[event.agentId] = true;
        }),
        "releaseReady",
      ],
    },
    "run.close": {
      actions: enqueueActions(({ context, enqueue }) => {
        for (const agent of Object.values(context.actors)) enqueue.stopChild(agent);
      }),
    },
    "agent.ended": {
      actions: [
        enqueueActions(({ context, event }) => {
          context.settled[event.agentId] = true;
        }),
        enqueueActions(({ context, event, enqueue }) => {
          const parent = event.parentAgentId ? context.actors[event.parentAgentId] : undefined;
          if (parent) enqueue.sendTo(parent, { type: "child.ended" });
        }),
        "releaseReady",
      ],
    },
  },
  initial: "ready",
  states: {
    ready: {
      on: {
        control: { target: "working", actions: assign({ current: ({ event }) => cascade(event.request) }) },
      },
    },
    working: {
      initial: "next",
      on: {
        control: { actions: assign({ queue: ({ context, event }) => [...context.queue, event.request] }) },
      },
      states: {
        next: {
          always: [
            { guard: "cascadeDone", target: "#run.finish" },
            { target: "waiting", actions: "sendChunk" },
          ],
        },
        // The timeout counts from when the wave was sent: each member has as long as it had alone.
        waiting: {
          always: { guard: "waveAnswered", target: "next" },
          after: { memberTimeout: { target: "next", actions: "failUnanswered" } },
          on: {
            "member.reply": { guard: "answersCurrent", actions: "recordAnswer" },
            "control.continue": { guard: "continuesCurrent", actions: "sendChunk" },
          },
        },
      },
    },
    finish: {
      entry: emit(({ context }) => ({
        type: "control.done" as const,
        requestId: context.current?.request.requestId ?? "",
        results: context.current?.results ?? [],
      })),
      always: [
        {
          guard: "hasQueued",
          target: "working",
          actions: assign({
            current: ({ context }) => cascade(context.queue[0]!),
            queue: ({ context }) => context.queue.slice(1),
          }),
        },
        { target: "ready", actions: assign({ current: null }) },
      ],
    },
  },
});

export type RunActor = ReturnType<typeof createActor<typeof runMachine>>;

/**
 * Give an agent its actor and hand it to the run: the run actor is its parent (the agent's
 * answers, settles and ends go to it) and holds it in `actors`, and stopping the run stops it
 * (`stopRun`). It is made here rather than with XState's `spawnChild`, because XState copies the
 * parent's `children` map on every spawn and stop: one run of 10,000 agents spent 27 s in those
 * copies alone. Started once the run has it, as `spawnChild` starts a child after the spawning step.
 */
export function addAgent(
  run: RunActor,
  logic: AgentLogic,
  add: { input: AgentInput; waitFor: string[]; counted?: boolean },
): AgentRef {
  const agent = createActor(logic, { id: add.input.agentId, parent: run, input: add.input });
  run.send({ type: "agent.add", agent, ...add });
  agent.start();
  return agent;
}

/** Stop every agent actor the run holds (what XState does for a parent's `children`), then the run actor. */
export function stopRun(run: RunActor): void {
  run.send({ type: "run.close" });
  run.stop();
}
