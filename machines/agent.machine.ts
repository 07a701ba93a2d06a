import { assign, emit, enqueueActions, fromCallback, fromPromise, sendTo, setup } from "xstate";
import { errorMessage } from "../src/errors.ts";
import type {
  AgentEmitted,
  CloseInput,
  AgentEvent,
  AgentInput,
  ControlOutcome,
  Delivery,
  EndOutcome,
  Fact,
  HarnessActorInput,
  HarnessCommandEvent,
  PausedBy,
  ProvisionInput,
  SandboxActorInput,
} from "./agent.types.ts";

interface AgentContext {
  start: AgentInput["start"];
  agentId: string;
  runId: string;
  sandboxId: string;
  keepAlive: boolean;
  turnMaxMs: number;
  /** Prompts waiting for a running harness (initial prompt, prompts while paused, steers to idle agents). */
  prompts: string[];
  /** Steer messages accepted while paused, delivered on resume. */
  steers: string[];
  /** Turns handed to the harness and not yet settled. */
  inflight: number;
  turns: number;
  liveChildren: number;
  pausedBy: PausedBy | null;
  pendingPause: PausedBy | null;
  /** The control request an effect state answers when it finishes. */
  request: { requestId: string; by: PausedBy } | null;
  /** A steer handed to the harness whose answer has not come back: the agent may not finish before it does. */
  steering: string | null;
  /** A resume that arrived while the agent was freezing on its own (joining a subtree pause): run once frozen. */
  resumeAfterPause: string | null;
  quietAbort: boolean;
  failure: string | null;
  end: { outcome: EndOutcome; error?: string };
}

interface ReplyParams {
  requestId: string;
  outcome: ControlOutcome;
  error?: string;
  delivery?: Delivery;
}

const notProvided = async (): Promise<never> => {
  throw new Error("effect not provided: pass it with machine.provide()");
};

/**
 * One agent: spawning → provisioning → running ⇄ paused → done | aborted. Pure: every side
 * effect is a named actor provided from `actors/`. Every control event is answered with exactly
 * one `member.reply` to the parent (the run supervisor), also in the ended states, so a cascade
 * never waits on an agent that cannot answer.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    input: {} as AgentInput,
    events: {} as AgentEvent,
    emitted: {} as AgentEmitted,
  },
  actors: {
    provision: fromPromise<void, ProvisionInput>(notProvided),
    harness: fromCallback<HarnessCommandEvent, HarnessActorInput>(() => {
      throw new Error("harness effect not provided");
    }),
    freeze: fromPromise<void, SandboxActorInput>(notProvided),
    thaw: fromPromise<void, SandboxActorInput>(notProvided),
    close: fromPromise<void, CloseInput>(notProvided),
  },
  delays: {
    quietLimit: ({ context }) => context.turnMaxMs,
  },
  guards: {
    hasPendingPause: ({ context }) => context.pendingPause !== null,
    busy: ({ context }) => context.inflight > 0,
    turnFailed: ({ context }) => context.failure !== null,
    canFinish: ({ context }) =>
      context.turns > 0 &&
      context.inflight === 0 &&
      context.liveChildren === 0 &&
      !context.keepAlive &&
      context.prompts.length === 0 &&
      context.steering === null,
    resumeAfterPause: ({ context }) => context.resumeAfterPause !== null,
  },
  actions: {
    fact: emit(({ context }, fact: Fact) => ({ type: "fact" as const, agentId: context.agentId, fact })),
    // An empty requestId marks work the machine started itself (a deferred pause, a queued steer): nobody waits for it.
    reply: enqueueActions(({ context, enqueue }, params: ReplyParams) => {
      if (params.requestId !== "") enqueue.sendParent({ type: "member.reply", agentId: context.agentId, ...params });
    }),
    replyToRequest: enqueueActions(({ context, enqueue }, params: { outcome: ControlOutcome; error?: string }) => {
      if (context.request && context.request.requestId !== "") {
        enqueue.sendParent({ type: "member.reply", agentId: context.agentId, requestId: context.request.requestId, ...params });
      }
      enqueue.assign({ request: null });
    }),
    /** Hand every waiting prompt to the harness as a turn, and every queued steer to the running turn (or as a turn). */
    flush: enqueueActions(({ context, enqueue }) => {
      let inflight = context.inflight;
      let turns = context.turns;
      for (const text of context.prompts) {
        enqueue.sendTo("harness", { type: "harness.prompt", text });
        inflight++;
        turns++;
      }
      for (const message of context.steers) {
        if (inflight > 0) {
          enqueue.sendTo("harness", { type: "harness.steer", message, requestId: "" });
          continue;
        }
        enqueue.sendTo("harness", { type: "harness.prompt", text: message });
        inflight++;
        turns++;
      }
      enqueue.assign({ prompts: [], steers: [], inflight, turns });
    }),
    /** A turn settled: its result is stated; a quiet-limit abort keeps the text so far (failed when there is none). */
    settleTurn: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "harness.settled") return;
      const outcome = event.outcome === "aborted" ? (event.text ? "success" : "failed") : event.outcome;
      enqueue.emit({ type: "fact", agentId: context.agentId, fact: { kind: "settled", outcome, text: event.text, hseq: event.hseq } });
      const reason = event.error ?? (context.quietAbort ? "the turn went quiet past the quiet-turn limit" : "the turn failed");
      enqueue.assign({
        inflight: Math.max(0, context.inflight - 1),
        quietAbort: false,
        failure: outcome === "failed" ? reason : context.failure,
      });
    }),
    steerAnswered: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "harness.steered") return;
      if (event.requestId === context.steering) enqueue.assign({ steering: null });
      const reply = { type: "member.reply" as const, agentId: context.agentId, requestId: event.requestId };
      if (!event.ok && !event.idle) {
        enqueue.sendParent({ ...reply, outcome: "failed", error: event.error ?? "the harness did not accept the message" });
        return;
      }
      if (!event.ok) {
        // The turn ended while the steer was on its way: the message starts a turn instead.
        enqueue.sendTo("harness", { type: "harness.prompt", text: event.message });
        enqueue.assign({ inflight: context.inflight + 1, turns: context.turns + 1 });
      }
      enqueue.emit({ type: "fact", agentId: context.agentId, fact: { kind: "steered", message: event.message } });
      enqueue.sendParent({ ...reply, outcome: "applied", delivery: event.ok ? "steer" : "turn" });
    }),
    /** The freeze finished: the agent is paused by whom its request says. */
    markPaused: enqueueActions(({ context, enqueue }) => {
      const by = context.request?.by ?? "operator";
      enqueue.emit({ type: "fact", agentId: context.agentId, fact: { kind: "state", from: "running", to: "paused", reason: by } });
      enqueue.assign({ pausedBy: by });
    }),
    /** Leaving `live` with a steer unanswered: the harness that would answer it is gone. */
    dropSteer: enqueueActions(({ context, enqueue }) => {
      if (context.steering === null) return;
      enqueue.sendParent({ type: "member.reply", agentId: context.agentId, requestId: context.steering, outcome: "failed", error: "the agent ended before the message reached it" });
      enqueue.assign({ steering: null });
    }),
    /** Steers to an agent that is paused or between paused and running wait for the next `running`. */
    queueSteer: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "control.steer") return;
      enqueue.assign({ steers: [...context.steers, event.message] });
      enqueue.emit({ type: "fact", agentId: context.agentId, fact: { kind: "steered", message: event.message } });
      enqueue.sendParent({ type: "member.reply", agentId: context.agentId, requestId: event.requestId, outcome: "applied", delivery: "queued" });
    }),
    startTurn: enqueueActions(({ context, enqueue }, params: { text: string }) => {
      enqueue.sendTo("harness", { type: "harness.prompt", text: params.text });
      enqueue.assign({ inflight: context.inflight + 1, turns: context.turns + 1 });
    }),
  },
}).createMachine({
  id: "agent",
  context: ({ input }) => ({
    start: input.start,
    agentId: input.agentId,
    runId: input.runId,
    sandboxId: input.sandboxId,
    keepAlive: input.keepAlive,
    turnMaxMs: input.turnMaxMs,
    prompts: input.prompt === undefined ? [] : [input.prompt],
    steers: [],
    inflight: input.inflight ?? 0,
    turns: input.turns ?? 0,
    liveChildren: input.liveChildren ?? 0,
    pausedBy: input.pausedBy ?? null,
    pendingPause: input.pendingPause ?? null,
    request: null,
    steering: null,
    resumeAfterPause: null,
    quietAbort: false,
    failure: null,
    end: { outcome: "success" },
  }),
  initial: "init",
  on: {
    // Controls no state takes (an agent finishing, closing or ended) are answered `noop`: the
    // supervisor waits for every member's answer.
    ...noopControls(),
    "child.spawned": { actions: assign({ liveChildren: ({ context }) => context.liveChildren + 1 }) },
    "child.ended": { actions: assign({ liveChildren: ({ context }) => Math.max(0, context.liveChildren - 1) }) },
  },
  states: {
    // New agents start in spawning or provisioning; restored ones where the ledger left them.
    init: {
      always: [
        { guard: ({ context }) => context.start === "spawning", target: "unforked.spawning" },
        { guard: ({ context }) => context.start === "provisioning", target: "unforked.provisioning" },
        { target: "live" },
      ],
    },
    // Not yet forked: controls are remembered and applied once the sandbox exists (spec §3 rule 3).
    unforked: {
      initial: "spawning",
      on: {
        "control.pause": {
          actions: [
            assign({ pendingPause: ({ event }) => event.by }),
            { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied" }) },
          ],
        },
        "control.resume": [
          {
            guard: "hasPendingPause",
            actions: [assign({ pendingPause: null }), { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied" }) }],
          },
          { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "failed", error: "agent is not paused" }) } },
        ],
        "control.steer": {
          actions: [
            assign({ prompts: ({ context, event }) => [...context.prompts, event.message] }),
            { type: "fact", params: ({ event }) => ({ kind: "steered", message: event.message }) },
            { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied", delivery: "queued" }) },
          ],
        },
        prompt: { actions: assign({ prompts: ({ context, event }) => [...context.prompts, event.text] }) },
      },
      states: {
        spawning: {
          on: {
            "deps.settled": {
              target: "provisioning",
              actions: { type: "fact", params: { kind: "state", from: "spawning", to: "provisioning", reason: "deps-settled" } },
            },
            "control.stop": {
              target: "#agent.aborted",
              actions: [
                { type: "fact", params: { kind: "ended", outcome: "aborted" } },
                { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied" }) },
              ],
            },
          },
        },
        provisioning: {
          invoke: {
            src: "provision",
            input: ({ context }) => ({ agentId: context.agentId, runId: context.runId, sandboxId: context.sandboxId }),
            onDone: {
              target: "#agent.live",
              actions: [
                { type: "fact", params: ({ context }) => ({ kind: "provisioned", sandboxId: context.sandboxId }) },
                { type: "fact", params: { kind: "state", from: "provisioning", to: "running", reason: "provisioned" } },
              ],
            },
            onError: {
              target: "#agent.finishing",
              actions: assign({ end: ({ event }) => ({ outcome: "failed" as const, error: `provisioning failed: ${errorMessage(event.error)}` }) }),
            },
          },
          on: {
            "control.stop": { target: "#agent.stopping", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }) }) },
          },
        },
      },
    },
    live: {
      invoke: {
        id: "harness",
        src: "harness",
        input: ({ context }) => ({ agentId: context.agentId, runId: context.runId, sandboxId: context.sandboxId }),
      },
      initial: "enter",
      exit: "dropSteer",
      on: {
        "harness.lost": {
          target: "finishing",
          actions: assign({ end: ({ event }) => ({ outcome: "lost" as const, error: event.error }) }),
        },
        "harness.settled": { actions: "settleTurn" },
        "harness.steered": { actions: "steerAnswered" },
        prompt: { actions: assign({ prompts: ({ context, event }) => [...context.prompts, event.text] }) },
        "control.stop": { target: "stopping", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }) }) },
      },
      states: {
        enter: {
          always: [
            { guard: "hasPendingPause", target: "pausing", actions: assign({ request: ({ context }) => ({ requestId: "", by: context.pendingPause ?? "cascade" }), pendingPause: null }) },
            { guard: ({ context }) => context.pausedBy !== null, target: "paused" },
            { target: "running" },
          ],
        },
        running: {
          entry: "flush",
          initial: "check",
          states: {
            check: {
              always: [
                { guard: "turnFailed", target: "#agent.finishing", actions: assign({ end: ({ context }) => ({ outcome: "failed" as const, error: context.failure ?? undefined }) }) },
                { guard: "busy", target: "turn" },
                { target: "idle" },
              ],
            },
            idle: {
              always: { guard: "canFinish", target: "#agent.finishing", actions: assign({ end: { outcome: "success" } }) },
            },
            // Every harness event restarts the quiet-turn clock; leaving for `paused` stops it, so
            // paused time never counts.
            turn: {
              after: {
                quietLimit: { actions: [assign({ quietAbort: true }), sendTo("harness", { type: "harness.abort" })] },
              },
              on: { "harness.activity": { target: "turn", reenter: true } },
            },
          },
          on: {
            prompt: { target: ".turn", actions: { type: "startTurn", params: ({ event }) => ({ text: event.text }) } },
            "harness.settled": { target: ".check", actions: "settleTurn" },
            // A steer that reached an idle harness starts a turn: `check` starts its quiet clock.
            "harness.steered": { target: ".check", actions: "steerAnswered" },
            "control.pause": { target: "pausing", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: event.by }) }) },
            "control.resume": { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "failed", error: "agent is not paused" }) } },
            "control.steer": [
              {
                guard: "busy",
                actions: [
                  assign({ steering: ({ event }) => event.requestId }),
                  sendTo("harness", ({ event }) => ({ type: "harness.steer" as const, message: event.message, requestId: event.requestId })),
                ],
              },
              {
                target: ".turn",
                actions: [
                  { type: "startTurn", params: ({ event }) => ({ text: event.message }) },
                  { type: "fact", params: ({ event }) => ({ kind: "steered", message: event.message }) },
                  { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied", delivery: "turn" }) },
                ],
              },
            ],
          },
        },
        pausing: {
          invoke: {
            src: "freeze",
            input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId }),
            onDone: [
              {
                guard: "resumeAfterPause",
                target: "resuming",
                actions: [
                  "markPaused",
                  { type: "replyToRequest", params: { outcome: "applied" } },
                  assign({ request: ({ context }) => ({ requestId: context.resumeAfterPause!, by: "operator" as const }), resumeAfterPause: null }),
                ],
              },
              { target: "paused", actions: ["markPaused", { type: "replyToRequest", params: { outcome: "applied" } }] },
            ],
            onError: {
              target: "running",
              actions: [
                { type: "replyToRequest", params: ({ event }) => ({ outcome: "failed", error: errorMessage(event.error) }) },
                // The resume that was waiting finds the agent running: nothing left to do.
                { type: "reply", params: ({ context }) => ({ requestId: context.resumeAfterPause ?? "", outcome: "noop" }) },
                assign({ resumeAfterPause: null }),
              ],
            },
          },
          on: {
            // Only a pause the agent started itself (joining a subtree pause once forked) can be
            // under way when a control arrives: the supervisor sends one control at a time.
            "control.pause": { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "noop" }) } },
            "control.resume": { actions: assign({ resumeAfterPause: ({ event }) => event.requestId }) },
            "control.steer": { actions: "queueSteer" },
          },
        },
        paused: {
          on: {
            "control.pause": { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "noop" }) } },
            "control.resume": { target: "resuming", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }) }) },
            "control.steer": { actions: "queueSteer" },
          },
        },
        resuming: {
          invoke: {
            src: "thaw",
            input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId }),
            onDone: {
              target: "running",
              actions: [
                { type: "fact", params: ({ context }) => ({ kind: "state", from: "paused", to: "running", reason: context.pausedBy ?? "operator" }) },
                assign({ pausedBy: null }),
                { type: "replyToRequest", params: { outcome: "applied" } },
              ],
            },
            onError: { target: "paused", actions: { type: "replyToRequest", params: ({ event }) => ({ outcome: "failed", error: errorMessage(event.error) }) } },
          },
          on: { "control.steer": { actions: "queueSteer" } },
        },
      },
    },
    stopping: {
      invoke: {
        src: "close",
        input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId, ending: { outcome: "aborted" as const } }),
        onDone: { target: "aborted" },
        onError: { target: "aborted" },
      },
      exit: [{ type: "fact", params: { kind: "ended", outcome: "aborted" } }, { type: "replyToRequest", params: { outcome: "applied" } }],
    },
    finishing: {
      invoke: {
        src: "close",
        input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId, ending: context.end }),
        onDone: { target: "done" },
        onError: { target: "done" },
      },
      exit: { type: "fact", params: ({ context }) => ({ kind: "ended", ...context.end }) },
    },
    // Ended: every control is answered `noop` (by the handlers at the root); the outcome is kept.
    done: {},
    aborted: {},
  },
});

/** `noop` for every control: an ended or ending agent keeps its recorded outcome. */
function noopControls() {
  const noop = { type: "reply", params: ({ event }: { event: { requestId: string } }) => ({ requestId: event.requestId, outcome: "noop" as const }) } as const;
  return { "control.pause": { actions: noop }, "control.resume": { actions: noop }, "control.stop": { actions: noop }, "control.steer": { actions: noop } };
}
