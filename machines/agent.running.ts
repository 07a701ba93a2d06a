import { assign, not, sendTo } from "xstate";
import { reply } from "./agent.replies.ts";
import { agentSetup } from "./agent.setup.ts";

/**
 * The agent's `running` state (inside `live`): between turns (`idle`: awake, hibernating or asleep),
 * waking its harness, or in a turn on the quiet-turn clock. See `agent.machine.ts`.
 */
export const running = agentSetup.createStateConfig({
  tags: ["running"],
  // Host calls held by a pause start again.
  entry: sendTo("harness", { type: "harness.release" }),
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
          guard: ({ context }) =>
            context.asleep && (context.prompts.length > 0 || context.steers.length > 0 || context.resend !== null),
          target: "waking",
        },
        // A restored agent's spawn prompt goes to its harness before anything else.
        { guard: "hasResend", target: "check", reenter: true, actions: "resend" },
        { guard: "hasQueued", target: "turn", actions: "flush" },
        { guard: "busy", target: "turn" },
        // Straight to idle's own state (one microstep, not two: every resume and turn ends here).
        { guard: "asleep", target: "idle.asleep" },
        { target: "idle.awake" },
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
      // Entered by `check`, which picks `asleep` or `awake`.
      initial: "awake",
      states: {
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
              actions: [
                { type: "queueSteer", params: { delivery: "turn" } },
                sendTo("harness", { type: "harness.stayAwake" }),
              ],
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
            "control.steer": {
              target: "#agent.live.running.check",
              actions: { type: "queueSteer", params: { delivery: "turn" } },
            },
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
        "control.steer": { actions: { type: "queueSteer", params: { delivery: "turn" } } },
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
});
