import { assign, sendTo } from "xstate";
import { reply } from "./agent.replies.ts";
import { running } from "./agent.running.ts";
import { agentSetup } from "./agent.setup.ts";
import type { AgentStart, RecordedHarness } from "./agent.types.ts";
import { widenDrain } from "./drain.ts";
import { errorMessage } from "./error-message.ts";

/**
 * The agent's `live` state: its sandbox exists and its harness actor holds the connection. It is
 * reattached after a restart, running (see `agent.running.ts`), or pausing, paused and resuming.
 * See `agent.machine.ts`.
 */
export const live = agentSetup.createStateConfig({
  tags: ["live"],
  invoke: {
    id: "harness",
    src: "harness",
    input: ({ context }) => ({
      agentId: context.input.agentId,
      runId: context.input.runId,
      sandboxId: context.input.sandboxId,
      asleep: context.asleep,
      ...recordedHarness(context.input.start),
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
        {
          guard: ({ context }) => context.pausedBy !== null,
          target: "paused",
          actions: sendTo("harness", { type: "harness.hold" }),
        },
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
          agentId: context.input.agentId,
          sandboxId: context.input.sandboxId,
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
          entry: sendTo("harness", { type: "harness.hold" }),
          on: {
            "control.pause": { actions: reply("noop") },
            "control.resume": { actions: "deferRequest" },
          },
        },
      },
    },
    running,
    // Paused (and on the way there), the agent's waiting host calls stand still; `running` releases them.
    pausing: {
      tags: ["paused"],
      entry: sendTo("harness", { type: "harness.hold" }),
      invoke: {
        src: "freeze",
        input: ({ context }) => ({ agentId: context.input.agentId, sandboxId: context.input.sandboxId }),
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
    // Its harness holds its host calls since `pausing` (or `enter`) told it to; `running` releases them.
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
        input: ({ context }) => ({ agentId: context.input.agentId, sandboxId: context.input.sandboxId }),
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
});

/**
 * What the ledger records of the harness where the agent begins: nothing for a fresh spawn (only its
 * harness actor writes those counts, and it has not run), the restart's own reading for a reattached
 * agent; a half-made agent started again reads them.
 */
function recordedHarness(start: AgentStart): { recorded?: RecordedHarness } {
  if (start.state === "live") return start.restored.recorded ? { recorded: start.restored.recorded } : {};
  if ((start.state === "spawning" || start.state === "provisioning") && !start.again)
    return { recorded: { hseq: 0, prompts: 0 } };
  return {};
}
