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
      context.turns > 0 && context.inflight === 0 && context.liveChildren === 0 && !context.keepAlive && context.prompts.length === 0,
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
    quietAbort: false,
    failure: null,
    end: { outcome: "success" },
  }),
  initial: "init",
  on: {
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
            "control.pause": { target: "pausing", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: event.by }) }) },
            "control.resume": { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "failed", error: "agent is not paused" }) } },
            "control.steer": [
              { guard: "busy", actions: sendTo("harness", ({ event }) => ({ type: "harness.steer" as const, message: event.message, requestId: event.requestId })) },
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
            onDone: {
              target: "paused",
              actions: [
                { type: "fact", params: ({ context }) => ({ kind: "state", from: "running", to: "paused", reason: context.request?.by ?? "operator" }) },
                assign({ pausedBy: ({ context }) => context.request?.by ?? "operator" }),
                { type: "replyToRequest", params: { outcome: "applied" } },
              ],
            },
            onError: { target: "running", actions: { type: "replyToRequest", params: ({ event }) => ({ outcome: "failed", error: errorMessage(event.error) }) } },
          },
        },
        paused: {
          on: {
            "control.pause": { actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "noop" }) } },
            "control.resume": { target: "resuming", actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }) }) },
            "control.steer": {
              actions: [
                assign({ steers: ({ context, event }) => [...context.steers, event.message] }),
                { type: "fact", params: ({ event }) => ({ kind: "steered", message: event.message }) },
                { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied", delivery: "queued" }) },
              ],
            },
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
    done: { on: endedControls() },
    aborted: { on: endedControls() },
  },
});

/** An ended agent answers every control with `noop`: its recorded outcome is kept. */
function endedControls() {
  const noop = { type: "reply", params: ({ event }: { event: { requestId: string } }) => ({ requestId: event.requestId, outcome: "noop" as const }) } as const;
  return { "control.pause": { actions: noop }, "control.resume": { actions: noop }, "control.stop": { actions: noop }, "control.steer": { actions: noop } };
}
