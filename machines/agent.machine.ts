import { assign, not, sendTo } from "xstate";
import { errorMessage } from "../src/errors.ts";
import { initialContext } from "./agent.context.ts";
import { agentSetup } from "./agent.setup.ts";

/**
 * One agent: spawning → provisioning → running ⇄ paused → done | aborted. Pure: every side
 * effect is a named actor provided from `actors/`. Every control event is answered with exactly
 * one `member.reply` to the parent (the run supervisor), also in the ended states, so a cascade
 * never waits on an agent that cannot answer: `test/machines/reply-rule.test.ts` checks this for
 * every control in every reachable state. States carry tags (`AgentTag`) that say the agent's
 * status; the service reads them with `hasTag` (`agent-status.ts`).
 */
export const agentMachine = agentSetup.createMachine({
  id: "agent",
  context: ({ input }) => initialContext(input),
  initial: "init",
  on: {
    // Controls no state takes (an agent finishing, closing or ended) are answered `noop`: the
    // supervisor waits for every member's answer.
    ...noopControls(),
    "child.spawned": { actions: assign({ liveChildren: ({ context }) => context.liveChildren + 1 }) },
    "child.ended": { actions: assign({ liveChildren: ({ context }) => Math.max(0, context.liveChildren - 1) }) },
    "gateway.hold": { actions: assign({ gatewayHolds: ({ context }) => context.gatewayHolds + 1 }) },
    "gateway.release": { actions: assign({ gatewayHolds: ({ context }) => Math.max(0, context.gatewayHolds - 1) }) },
    "approval.hold": { actions: assign({ approvalHolds: ({ context }) => context.approvalHolds + 1 }) },
    "approval.release": { actions: assign({ approvalHolds: ({ context }) => Math.max(0, context.approvalHolds - 1) }) },
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
            actions: [
              assign({ pendingPause: null }),
              { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied" }) },
            ],
          },
          {
            actions: {
              type: "reply",
              params: ({ event }) => ({ requestId: event.requestId, outcome: "failed", error: "agent is not paused" }),
            },
          },
        ],
        "control.steer": {
          actions: [
            assign({ prompts: ({ context, event }) => [...context.prompts, event.message] }),
            { type: "fact", params: ({ event }) => ({ kind: "steered", message: event.message }) },
            {
              type: "reply",
              params: ({ event }) => ({ requestId: event.requestId, outcome: "applied", delivery: "queued" }),
            },
          ],
        },
        prompt: { actions: assign({ prompts: ({ context, event }) => [...context.prompts, event.text] }) },
      },
      states: {
        spawning: {
          tags: ["spawning"],
          on: {
            "deps.settled": {
              target: "provisioning",
              actions: {
                type: "fact",
                params: { kind: "state", from: "spawning", to: "provisioning", reason: "deps-settled" },
              },
            },
            "control.stop": {
              target: "#agent.aborted",
              actions: [
                {
                  type: "fact",
                  params: ({ event }) => ({
                    kind: "ended",
                    outcome: "aborted",
                    ...(event.reason ? { reason: event.reason } : {}),
                  }),
                },
                { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "applied" }) },
              ],
            },
            // A drain starts nothing new: an agent still waiting for its inputs never starts.
            drain: {
              target: "#agent.aborted",
              actions: { type: "fact", params: { kind: "ended", outcome: "aborted", reason: "drained" } },
            },
          },
        },
        provisioning: {
          tags: ["provisioning"],
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
              actions: assign({
                end: ({ event }) => ({
                  outcome: "failed" as const,
                  error: `provisioning failed: ${errorMessage(event.error)}`,
                }),
              }),
            },
          },
          on: {
            "control.stop": {
              target: "#agent.stopping",
              actions: assign({
                request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }),
                stopReason: ({ event }) => event.reason ?? null,
              }),
            },
            // Its sandbox is still being made: it is closed, and the agent never starts.
            drain: { target: "#agent.stopping", actions: assign({ stopReason: "drained" }) },
          },
        },
      },
    },
    live: {
      tags: ["live"],
      invoke: {
        id: "harness",
        src: "harness",
        input: ({ context }) => ({ agentId: context.agentId, runId: context.runId, sandboxId: context.sandboxId }),
      },
      initial: "enter",
      exit: "dropSteers",
      on: {
        "harness.lost": {
          target: "finishing",
          actions: [
            { type: "abandonRequests", params: ({ event }) => ({ error: event.error }) },
            assign({ end: ({ event }) => ({ outcome: "lost" as const, error: event.error }) }),
          ],
        },
        "harness.settled": { actions: "settleTurn" },
        "harness.steered": { actions: "steerAnswered" },
        prompt: { actions: assign({ prompts: ({ context, event }) => [...context.prompts, event.text] }) },
        "control.stop": {
          target: "stopping",
          actions: [
            { type: "abandonRequests", params: { error: "the agent was stopped before this finished" } },
            assign({
              request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }),
              stopReason: ({ event }) => event.reason ?? null,
            }),
          ],
        },
        // Marked; `idle` and `paused` end it once its accepted work is done (the `drained` guard).
        drain: {
          // A second drain widens a first one to the subtree; the earlier deadline stands.
          actions: assign({
            draining: ({ context, event }) => ({
              subtree: event.drain.subtree || (context.draining?.subtree ?? false),
              deadline: Math.min(event.drain.deadline, context.draining?.deadline ?? Infinity),
            }),
          }),
        },
      },
      states: {
        enter: {
          always: [
            {
              guard: "hasPendingPause",
              target: "pausing",
              actions: assign({
                request: ({ context }) => ({ requestId: "", by: context.pendingPause ?? "cascade" }),
                pendingPause: null,
              }),
            },
            { guard: ({ context }) => context.pausedBy !== null, target: "paused" },
            { target: "running" },
          ],
        },
        running: {
          tags: ["running"],
          entry: "flush",
          initial: "check",
          states: {
            check: {
              always: [
                {
                  guard: "turnFailed",
                  target: "#agent.finishing",
                  // A draining agent ends as drained whatever its turn's outcome.
                  actions: assign({
                    end: ({ context }) => ({
                      outcome: "failed" as const,
                      error: context.failure ?? undefined,
                      ...(context.draining ? { reason: "drained" as const } : {}),
                    }),
                  }),
                },
                { guard: "busy", target: "turn" },
                { target: "idle" },
              ],
            },
            // Idle between turns: the harness actor hibernates the harness once the agent has been
            // idle long enough (SWARM_HIBERNATE_AFTER_MS); the next command wakes it. The agent is
            // `running` all along.
            idle: {
              entry: sendTo("harness", { type: "harness.idle" }),
              always: [
                {
                  guard: "drained",
                  target: "#agent.finishing",
                  actions: assign({ end: { outcome: "success", reason: "drained" } }),
                },
                { guard: "canFinish", target: "#agent.finishing", actions: assign({ end: { outcome: "success" } }) },
              ],
            },
            // Every harness event restarts the quiet-turn clock; leaving for `paused` stops it, and
            // so does a model call the gateway holds: paused and held time never count.
            turn: {
              initial: "clock",
              states: {
                clock: {
                  always: { guard: "holding", target: "held" },
                  after: {
                    quietLimit: {
                      actions: [assign({ quietAbort: true }), sendTo("harness", { type: "harness.abort" })],
                    },
                  },
                },
                held: {
                  always: { guard: not("holding"), target: "clock" },
                },
              },
              on: { "harness.activity": { target: "turn", reenter: true } },
            },
          },
          on: {
            prompt: { target: ".turn", actions: { type: "startTurn", params: ({ event }) => ({ text: event.text }) } },
            "harness.settled": { target: ".check", actions: "settleTurn" },
            // A steer that reached an idle harness starts a turn: `check` starts its quiet clock.
            "harness.steered": { target: ".check", actions: "steerAnswered" },
            "control.pause": {
              target: "pausing",
              actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: event.by }) }),
            },
            "control.resume": {
              actions: {
                type: "reply",
                params: ({ event }) => ({
                  requestId: event.requestId,
                  outcome: "failed",
                  error: "agent is not paused",
                }),
              },
            },
            "control.steer": [
              {
                guard: "busy",
                actions: [
                  assign({ steering: ({ context, event }) => [...context.steering, event.requestId] }),
                  sendTo("harness", ({ event }) => ({
                    type: "harness.steer" as const,
                    message: event.message,
                    requestId: event.requestId,
                  })),
                ],
              },
              {
                target: ".turn",
                actions: [
                  { type: "startTurn", params: ({ event }) => ({ text: event.message }) },
                  { type: "fact", params: ({ event }) => ({ kind: "steered", message: event.message }) },
                  {
                    type: "reply",
                    params: ({ event }) => ({ requestId: event.requestId, outcome: "applied", delivery: "turn" }),
                  },
                ],
              },
            ],
          },
        },
        pausing: {
          tags: ["paused"],
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
                  assign({
                    request: ({ context }) => ({ requestId: context.resumeAfterPause!, by: "operator" as const }),
                    resumeAfterPause: null,
                  }),
                ],
              },
              { target: "paused", actions: ["markPaused", { type: "replyToRequest", params: { outcome: "applied" } }] },
            ],
            onError: {
              target: "running",
              actions: [
                {
                  type: "replyToRequest",
                  params: ({ event }) => ({ outcome: "failed", error: errorMessage(event.error) }),
                },
                // The resume that was waiting finds the agent running: nothing left to do.
                {
                  type: "reply",
                  params: ({ context }) => ({ requestId: context.resumeAfterPause ?? "", outcome: "noop" }),
                },
                assign({ resumeAfterPause: null }),
              ],
            },
          },
          on: {
            // Only a pause the agent started itself (joining a subtree pause once forked) can be
            // under way when a control arrives: the supervisor sends one control at a time.
            "control.pause": {
              actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "noop" }) },
            },
            // A newer resume replaces one already waiting (whose caller gave up on it): that one is a `noop`.
            "control.resume": {
              actions: [
                {
                  type: "reply",
                  params: ({ context }) => ({ requestId: context.resumeAfterPause ?? "", outcome: "noop" }),
                },
                assign({ resumeAfterPause: ({ event }) => event.requestId }),
              ],
            },
            "control.steer": { actions: "queueSteer" },
          },
        },
        paused: {
          tags: ["paused"],
          // Drained while paused with nothing left to run: it ends without being resumed.
          always: {
            guard: "drained",
            target: "#agent.finishing",
            actions: assign({ end: { outcome: "success", reason: "drained" } }),
          },
          on: {
            "control.pause": {
              actions: { type: "reply", params: ({ event }) => ({ requestId: event.requestId, outcome: "noop" }) },
            },
            "control.resume": {
              target: "resuming",
              actions: assign({ request: ({ event }) => ({ requestId: event.requestId, by: "operator" as const }) }),
            },
            "control.steer": { actions: "queueSteer" },
          },
        },
        resuming: {
          tags: ["paused"],
          invoke: {
            src: "thaw",
            input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId }),
            onDone: {
              target: "running",
              actions: [
                {
                  type: "fact",
                  params: ({ context }) => ({
                    kind: "state",
                    from: "paused",
                    to: "running",
                    reason: context.pausedBy ?? "operator",
                  }),
                },
                assign({ pausedBy: null }),
                { type: "replyToRequest", params: { outcome: "applied" } },
              ],
            },
            onError: {
              target: "paused",
              actions: {
                type: "replyToRequest",
                params: ({ event }) => ({ outcome: "failed", error: errorMessage(event.error) }),
              },
            },
          },
          on: { "control.steer": { actions: "queueSteer" } },
        },
      },
    },
    stopping: {
      tags: ["ending"],
      invoke: {
        src: "close",
        input: ({ context }) => ({
          agentId: context.agentId,
          sandboxId: context.sandboxId,
          ending: { outcome: "aborted" as const, ...(context.stopReason ? { reason: context.stopReason } : {}) },
        }),
        onDone: { target: "aborted" },
        onError: { target: "aborted" },
      },
      exit: [
        {
          type: "fact",
          params: ({ context }) => ({
            kind: "ended",
            outcome: "aborted",
            ...(context.stopReason ? { reason: context.stopReason } : {}),
          }),
        },
        { type: "replyToRequest", params: { outcome: "applied" } },
      ],
    },
    finishing: {
      tags: ["ending"],
      invoke: {
        src: "close",
        input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId, ending: context.end }),
        onDone: { target: "done" },
        onError: { target: "done" },
      },
      exit: { type: "fact", params: ({ context }) => ({ kind: "ended", ...context.end }) },
    },
    // Ended: every control is answered `noop` (by the handlers at the root); the outcome is kept.
    done: { tags: ["done"] },
    aborted: { tags: ["aborted"] },
  },
});

/** `noop` for every control: an ended or ending agent keeps its recorded outcome. */
function noopControls() {
  const noop = {
    type: "reply",
    params: ({ event }: { event: { requestId: string } }) => ({ requestId: event.requestId, outcome: "noop" as const }),
  } as const;
  return {
    "control.pause": { actions: noop },
    "control.resume": { actions: noop },
    "control.stop": { actions: noop },
    "control.steer": { actions: noop },
  };
}
