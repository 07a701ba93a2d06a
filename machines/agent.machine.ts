import { assign, not, sendTo } from "xstate";
import { initialContext } from "./agent.context.ts";
import { agentSetup } from "./agent.setup.ts";
import { widenDrain } from "./drain.ts";
import { errorMessage } from "./error-message.ts";

const reply = (outcome: "applied" | "noop" | "failed", error?: string) =>
  ({
    type: "reply",
    params: ({ event }: { event: { requestId: string } }) => ({
      requestId: event.requestId,
      outcome,
      ...(error ? { error } : {}),
    }),
  }) as const;

/**
 * One agent: spawning → provisioning → live (running ⇄ paused; asleep or awake) → done | aborted.
 * Pure: every side effect is a named actor provided from `actors/`. Every control event is
 * answered with exactly one `member.reply` to the parent (the run supervisor), also in the ended
 * states, so a cascade never waits on an agent that cannot answer:
 * `test/machines/reply-rule.test.ts` checks this for every control in every reachable state. States
 * carry tags (`AgentTag`) that say the agent's status; the service reads them with `hasTag`
 * (`agent-status.ts`). A restart starts the same machine with the ledger's facts as input
 * (`AgentStart`): it reattaches a live sandbox or finishes an ending one in its own states.
 */
export const agentMachine = agentSetup.createMachine({
  id: "agent",
  context: ({ input }) => initialContext(input),
  initial: "init",
  on: {
    // Controls no state takes (an agent finishing, closing or ended) are answered `noop`: the
    // supervisor waits for every member's answer.
    "control.pause": { actions: reply("noop") },
    "control.resume": { actions: reply("noop") },
    "control.stop": { actions: reply("noop") },
    "control.steer": { actions: reply("noop") },
    "child.spawned": { actions: assign({ liveChildren: ({ context }) => context.liveChildren + 1 }) },
    "child.ended": { actions: assign({ liveChildren: ({ context }) => Math.max(0, context.liveChildren - 1) }) },
    "gateway.hold": { actions: assign({ gatewayHolds: ({ context }) => context.gatewayHolds + 1 }) },
    "gateway.release": { actions: assign({ gatewayHolds: ({ context }) => Math.max(0, context.gatewayHolds - 1) }) },
    "approval.hold": { actions: assign({ approvalHolds: ({ context }) => context.approvalHolds + 1 }) },
    "approval.release": {
      actions: assign({ approvalHolds: ({ context }) => Math.max(0, context.approvalHolds - 1) }),
    },
  },
  states: {
    // New agents start in spawning or provisioning; restored ones where the ledger left them.
    init: {
      always: [
        { guard: ({ context }) => context.start.state === "spawning", target: "unforked.spawning" },
        { guard: ({ context }) => context.start.state === "provisioning", target: "unforked.provisioning" },
        // Ending when the daemon stopped: it closes as recorded, and ends with the recorded outcome.
        { guard: ({ context }) => context.start.state === "ending", target: "finishing" },
        { guard: ({ context }) => context.pausedBy !== null, target: "live.reattaching.paused" },
        { target: "live.reattaching.running" },
      ],
    },
    // Not yet forked: controls are remembered and applied once the sandbox exists (spec §3 rule 3).
    unforked: {
      initial: "spawning",
      on: {
        "control.pause": {
          actions: [assign({ pendingPause: ({ event }) => event.by }), reply("applied")],
        },
        "control.resume": [
          { guard: "hasPendingPause", actions: [assign({ pendingPause: null }), reply("applied")] },
          { actions: reply("failed", "agent is not paused") },
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
        prompt: { actions: "queuePrompt" },
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
                reply("applied"),
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
            input: ({ context }) => ({
              agentId: context.agentId,
              runId: context.runId,
              sandboxId: context.sandboxId,
              again: context.start.state === "provisioning" && context.start.again === true,
            }),
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
        input: ({ context }) => ({
          agentId: context.agentId,
          runId: context.runId,
          sandboxId: context.sandboxId,
          asleep: context.asleep,
        }),
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
        // Hibernation and wakes that end while the agent is elsewhere (a pause came meanwhile).
        "harness.slept": { actions: "markAsleep" },
        "harness.woke": { actions: "markAwake" },
        prompt: { actions: "queuePrompt" },
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
        drain: { actions: assign({ draining: ({ context, event }) => widenDrain(context.draining, event.drain) }) },
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
        // After a restart, before anything else: the sandbox is checked, its freezer matched to
        // the ledger and its gateway served again (the harness actor reconnects meanwhile). A
        // pause or resume that comes meanwhile waits for it; a sandbox that is gone loses the agent.
        reattaching: {
          initial: "running",
          invoke: {
            src: "reattach",
            input: ({ context }) => ({
              agentId: context.agentId,
              sandboxId: context.sandboxId,
              paused: context.pausedBy !== null,
            }),
            onDone: [
              {
                guard: ({ context }) => context.request !== null && context.pausedBy === null,
                target: "pausing",
              },
              { guard: ({ context }) => context.request !== null, target: "resuming" },
              { target: "enter" },
            ],
            onError: {
              target: "#agent.finishing",
              actions: [
                {
                  type: "abandonRequests",
                  params: ({ event }) => ({ error: `agent lost: ${errorMessage(event.error)}` }),
                },
                assign({
                  end: ({ event }) => ({
                    outcome: "lost" as const,
                    error: `agent lost while the service was down: ${errorMessage(event.error)}`,
                  }),
                }),
              ],
            },
          },
          on: { "control.steer": { actions: "queueSteer" } },
          states: {
            running: {
              tags: ["running"],
              on: {
                "control.pause": { actions: "deferRequest" },
                "control.resume": { actions: reply("failed", "agent is not paused") },
              },
            },
            paused: {
              tags: ["paused"],
              on: {
                "control.pause": { actions: reply("noop") },
                "control.resume": { actions: "deferRequest" },
              },
            },
          },
        },
        running: {
          tags: ["running"],
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
                // A pause deferred while the harness was being woken.
                { guard: "hasRequest", target: "#agent.live.pausing" },
                // Work waits and the harness hibernates: it is woken first.
                {
                  guard: ({ context }) => context.asleep && (context.prompts.length > 0 || context.steers.length > 0),
                  target: "waking",
                },
                { guard: "hasQueued", target: "turn", actions: "flush" },
                { guard: "busy", target: "turn" },
                { target: "idle" },
              ],
            },
            // Idle between turns: ends when its work is done (`canFinish`, `drained`), awake or
            // asleep. Awake, the harness actor reports `harness.idleElapsed` once it stayed idle
            // SWARM_HIBERNATE_AFTER_MS; the agent then hibernates its harness. Asleep, the next
            // prompt or steer wakes it. It is `running` all along.
            idle: {
              always: [
                {
                  guard: "drained",
                  target: "#agent.finishing",
                  actions: assign({ end: { outcome: "success", reason: "drained" } }),
                },
                { guard: "canFinish", target: "#agent.finishing", actions: assign({ end: { outcome: "success" } }) },
              ],
              initial: "enter",
              states: {
                enter: { always: [{ guard: "asleep", target: "asleep" }, { target: "awake" }] },
                awake: {
                  entry: sendTo("harness", { type: "harness.idle" }),
                  on: { "harness.idleElapsed": "hibernating" },
                },
                hibernating: {
                  entry: sendTo("harness", { type: "harness.hibernate" }),
                  on: {
                    "harness.slept": { target: "asleep", actions: "markAsleep" },
                    "harness.awake": "#agent.live.running.check",
                    // The work waits for the hibernation to end or be given up.
                    prompt: { actions: ["queuePrompt", sendTo("harness", { type: "harness.stayAwake" })] },
                    "control.steer": {
                      actions: ["queueSteerAsTurn", sendTo("harness", { type: "harness.stayAwake" })],
                    },
                    "control.pause": {
                      target: "#agent.live.pausing",
                      actions: [
                        sendTo("harness", { type: "harness.stayAwake" }),
                        assign({ request: ({ event }) => ({ requestId: event.requestId, by: event.by }) }),
                      ],
                    },
                  },
                },
                asleep: {
                  tags: ["asleep"],
                  on: {
                    prompt: { target: "#agent.live.running.check", actions: "queuePrompt" },
                    "control.steer": { target: "#agent.live.running.check", actions: "queueSteerAsTurn" },
                  },
                },
              },
            },
            // The harness is being started again (through the start line). Work waits; a pause
            // gives the wake up if it has not started the harness yet, else waits for it.
            waking: {
              tags: ["asleep"],
              entry: sendTo("harness", { type: "harness.wake" }),
              on: {
                prompt: { actions: "queuePrompt" },
                "control.steer": { actions: "queueSteerAsTurn" },
                "control.pause": { actions: ["deferRequest", sendTo("harness", { type: "harness.stayAsleep" })] },
                "harness.woke": [
                  { guard: "hasRequest", target: "#agent.live.pausing", actions: "markAwake" },
                  { target: "check", actions: "markAwake" },
                ],
                // The wake was given up for a pause.
                "harness.slept": [{ guard: "hasRequest", target: "#agent.live.pausing" }, { target: "check" }],
              },
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
            "control.resume": { actions: reply("failed", "agent is not paused") },
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
            "control.pause": { actions: reply("noop") },
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
            "control.pause": { actions: reply("noop") },
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
      // A pause or resume deferred (or under way) when the agent came to its end is answered `failed`.
      entry: {
        type: "abandonRequests",
        params: ({ context }) => ({ error: context.end.error ?? "the agent ended before this finished" }),
      },
      invoke: {
        src: "close",
        input: ({ context }) => ({ agentId: context.agentId, sandboxId: context.sandboxId, ending: context.end }),
        onDone: [{ guard: ({ context }) => context.end.outcome === "aborted", target: "aborted" }, { target: "done" }],
        onError: [{ guard: ({ context }) => context.end.outcome === "aborted", target: "aborted" }, { target: "done" }],
      },
      exit: { type: "fact", params: ({ context }) => ({ kind: "ended", ...context.end }) },
    },
    // Ended: every control is answered `noop` (by the handlers at the root); the outcome is kept.
    done: { tags: ["done"] },
    aborted: { tags: ["aborted"] },
  },
});
