import { assign, emit, enqueueActions, sendTo, setup } from "xstate";
import type { MemberResult } from "../src/swarm-api.ts";
import { agentMachine } from "./agent.machine.ts";
import type { AgentInput, ControlOp, Delivery, EndReason, MemberReply, PausedBy } from "./agent.types.ts";

/** One member of a control request, in the order the cascade must visit them. */
export interface ControlMember {
  agentId: string;
  by: PausedBy;
}

export interface ControlRequest {
  requestId: string;
  op: ControlOp;
  members: ControlMember[];
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

export type RunEvent =
  /** `counted`: re-added after a restart, so its parent's restored `liveChildren` already counts it. */
  | { type: "agent.add"; input: AgentInput; waitFor: string[]; counted?: boolean }
  | { type: "agent.settled"; agentId: string }
  | { type: "agent.ended"; agentId: string; parentAgentId: string | null }
  | { type: "control"; request: ControlRequest }
  | MemberReply;

export type RunEmitted = { type: "control.done"; requestId: string; results: MemberAnswer[] };

interface RunContext {
  runId: string;
  /** How long one member may take to answer before it is recorded `failed` and the cascade moves on. */
  memberTimeoutMs: number;
  /** Agents that have an actor here. Agents restored already ended, or refused by a budget, have none. */
  actors: Record<string, true>;
  /** Agents whose result settled or that ended: what `waitFor` waits for. */
  settled: Record<string, true>;
  /** Spawning agents and the agents they still wait for. */
  waiting: Record<string, string[]>;
  queue: ControlRequest[];
  current: { request: ControlRequest; index: number; results: MemberAnswer[] } | null;
}

/**
 * The run supervisor: owns the run's agent actors, starts `waitFor` children when their
 * dependencies settle, tells parents when children end, and carries out control requests one at a
 * time. A cascade is a state that sends to one member, waits for its answer, then moves to the next,
 * so the order the request lists (parents first for pause, leaves first for stop and resume) is
 * the order things happen in.
 */
export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as { runId: string; memberTimeoutMs?: number },
    events: {} as RunEvent,
    emitted: {} as RunEmitted,
  },
  actors: { agent: agentMachine },
  delays: {
    memberTimeout: ({ context }) => context.memberTimeoutMs,
  },
  guards: {
    cascadeDone: ({ context }) => !context.current || context.current.index >= context.current.request.members.length,
    hasQueued: ({ context }) => context.queue.length > 0,
    memberWithoutActor: ({ context }) => {
      const member = context.current?.request.members[context.current.index];
      return member !== undefined && !context.actors[member.agentId];
    },
    answersCurrent: ({ context, event }) => {
      if (event.type !== "member.reply" || !context.current) return false;
      const member = context.current.request.members[context.current.index];
      return event.requestId === context.current.request.requestId && event.agentId === member?.agentId;
    },
  },
  actions: {
    sendToMember: sendTo(
      ({ context }) => context.current?.request.members[context.current.index]?.agentId ?? "",
      ({ context }) => {
        const request = context.current!.request;
        const member = request.members[context.current!.index]!;
        switch (request.op) {
          case "pause":
            return { type: "control.pause" as const, requestId: request.requestId, by: member.by };
          case "resume":
            return { type: "control.resume" as const, requestId: request.requestId };
          case "stop":
            return {
              type: "control.stop" as const,
              requestId: request.requestId,
              ...(request.reason ? { reason: request.reason } : {}),
            };
          case "steer":
            return { type: "control.steer" as const, requestId: request.requestId, message: request.message ?? "" };
        }
      },
    ),
    releaseReady: enqueueActions(({ context, enqueue }) => {
      const ready = Object.entries(context.waiting).filter(([, deps]) => deps.every((dep) => context.settled[dep]));
      if (ready.length === 0) return;
      const waiting = { ...context.waiting };
      for (const [agentId] of ready) {
        delete waiting[agentId];
        enqueue.sendTo(agentId, { type: "deps.settled" });
      }
      enqueue.assign({ waiting });
    }),
  },
}).createMachine({
  id: "run",
  context: ({ input }) => ({
    runId: input.runId,
    memberTimeoutMs: input.memberTimeoutMs ?? DEFAULT_MEMBER_TIMEOUT_MS,
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
          enqueue.spawnChild("agent", { id: event.input.agentId, input: event.input });
          // `actors` only grows, one key per agent: it is extended in place, as a copy
          // per spawn made a 10,000-agent run quadratic (nothing keeps an older snapshot's maps).
          context.actors[event.input.agentId] = true;
          if (event.input.start.state === "spawning")
            enqueue.assign({ waiting: { ...context.waiting, [event.input.agentId]: event.waitFor } });
          const parent = event.input.parentAgentId;
          if (parent && !event.counted && context.actors[parent]) enqueue.sendTo(parent, { type: "child.spawned" });
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
    "agent.ended": {
      actions: [
        enqueueActions(({ context, event }) => {
          context.settled[event.agentId] = true;
        }),
        enqueueActions(({ context, event, enqueue }) => {
          const parent = event.parentAgentId;
          if (parent && context.actors[parent]) enqueue.sendTo(parent, { type: "child.ended" });
        }),
        "releaseReady",
      ],
    },
  },
  initial: "ready",
  states: {
    ready: {
      on: {
        control: {
          target: "working",
          actions: assign({ current: ({ event }) => ({ request: event.request, index: 0, results: [] }) }),
        },
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
            // An agent without an actor has ended: it answers like every ended agent, `noop`.
            {
              guard: "memberWithoutActor",
              target: "next",
              reenter: true,
              actions: assign({
                current: ({ context }) => {
                  const current = context.current!;
                  const agentId = current.request.members[current.index]!.agentId;
                  return {
                    ...current,
                    index: current.index + 1,
                    results: [...current.results, { agentId, outcome: "noop" as const }],
                  };
                },
              }),
            },
            { target: "waiting", actions: "sendToMember" },
          ],
        },
        // A member that never answers (an effect that hangs, a lost reply) must not hang the run
        // and every later control: past the timeout it is recorded `failed` and the cascade goes on.
        waiting: {
          after: {
            memberTimeout: {
              target: "next",
              actions: assign({
                current: ({ context }) => {
                  const current = context.current!;
                  const agentId = current.request.members[current.index]!.agentId;
                  const error = `no answer from agent ${agentId} within ${context.memberTimeoutMs} ms`;
                  return {
                    ...current,
                    index: current.index + 1,
                    results: [...current.results, { agentId, outcome: "failed" as const, error }],
                  };
                },
              }),
            },
          },
          on: {
            "member.reply": {
              guard: "answersCurrent",
              target: "next",
              actions: assign({
                current: ({ context, event }) => {
                  const current = context.current!;
                  const { agentId, outcome, error, delivery } = event;
                  const result: MemberAnswer = {
                    agentId,
                    outcome,
                    ...(error ? { error } : {}),
                    ...(delivery ? { delivery } : {}),
                  };
                  return { ...current, index: current.index + 1, results: [...current.results, result] };
                },
              }),
            },
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
            current: ({ context }) => ({ request: context.queue[0]!, index: 0, results: [] }),
            queue: ({ context }) => context.queue.slice(1),
          }),
        },
        { target: "ready", actions: assign({ current: null }) },
      ],
    },
  },
});
