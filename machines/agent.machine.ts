import { assign } from "xstate";
import { type AgentContext, initialContext } from "./agent.context.ts";
import { live } from "./agent.live.ts";
import { reply } from "./agent.replies.ts";
import { agentSetup } from "./agent.setup.ts";
import type { Fact } from "./agent.types.ts";
import { errorMessage } from "./error-message.ts";

/**
 * One agent: spawning → provisioning → live (running ⇄ paused; asleep or awake) → done | aborted.
 * Pure: every side effect is a named actor provided from `actors/`. Every control event is
 * answered with exactly one `member.reply` to the parent (the run supervisor), also in the ended
 * states, so a cascade never waits on an agent that cannot answer:
 * `test/machines/reply-check.ts` (run by the reply-rule tests) checks this for every control in every reachable state. States
 * carry tags (`AgentTag`) that say the agent's status; the service reads them with `hasTag`
 * (`agent-status.ts`). A restart starts the same machine with the ledger's facts as input
 * (`AgentStart`): it reattaches a live sandbox or finishes an ending one in its own states.
 */
/** A stopped agent's end, with why when it was not the operator's abort. */
const abortedFact = ({ context }: { context: AgentContext }): Fact => ({
  kind: "ended",
  outcome: "aborted",
  ...(context.stopReason ? { reason: context.stopReason } : {}),
});

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
    "gateway.hold": {
      actions: assign({ holds: ({ context }) => ({ ...context.holds, gateway: context.holds.gateway + 1 }) }),
    },
    "gateway.release": {
      actions: assign({
        holds: ({ context }) => ({ ...context.holds, gateway: Math.max(0, context.holds.gateway - 1) }),
      }),
    },
    "node.unreachable": { actions: assign({ holds: ({ context }) => ({ ...context.holds, unreachable: true }) }) },
    "node.reachable": { actions: assign({ holds: ({ context }) => ({ ...context.holds, unreachable: false }) }) },
    "approval.hold": {
      actions: assign({ holds: ({ context }) => ({ ...context.holds, approvals: context.holds.approvals + 1 }) }),
    },
    "approval.release": {
      actions: assign({
        holds: ({ context }) => ({ ...context.holds, approvals: Math.max(0, context.holds.approvals - 1) }),
      }),
    },
  },
  states: {
    // New agents start in spawning or provisioning; restored ones where the ledger left them.
    init: {
      always: [
        { guard: ({ context }) => context.input.start.state === "spawning", target: "unforked.spawning" },
        { guard: ({ context }) => context.input.start.state === "provisioning", target: "unforked.provisioning" },
        // Ending when the daemon stopped: it closes as recorded, and ends with the recorded outcome.
        { guard: ({ context }) => context.input.start.state === "ending", target: "finishing" },
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
              agentId: context.input.agentId,
              runId: context.input.runId,
              sandboxId: context.input.sandboxId,
              again: context.input.start.state === "provisioning" && context.input.start.again === true,
            }),
            onDone: {
              target: "#agent.live",
              actions: [
                {
                  type: "fact",
                  params: ({ context, event }) => ({
                    kind: "provisioned",
                    sandboxId: context.input.sandboxId,
                    // A runtime that names no node (or a test's stand-in with no output) is one host.
                    node: event.output?.node ?? "local",
                  }),
                },
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
    live,
    stopping: {
      tags: ["ending"],
      entry: "replyIfUnreachable",
      invoke: {
        src: "close",
        input: ({ context }) => ({
          agentId: context.input.agentId,
          sandboxId: context.input.sandboxId,
          ending: { outcome: "aborted" as const, ...(context.stopReason ? { reason: context.stopReason } : {}) },
        }),
        // Its node was declared down before it answered again: lost, not aborted. The end is
        // stated before the reply, so a stop cascade finds the agent ended when it moves on.
        onDone: [
          {
            guard: ({ event }) => event.output?.lost !== undefined,
            target: "done",
            actions: [
              assign({ end: ({ event }) => ({ outcome: "lost" as const, error: event.output!.lost }) }),
              { type: "fact", params: ({ event }) => ({ kind: "ended", outcome: "lost", error: event.output!.lost }) },
              { type: "replyToRequest", params: { outcome: "applied" } },
            ],
          },
          {
            target: "aborted",
            actions: [
              { type: "fact", params: abortedFact },
              { type: "replyToRequest", params: { outcome: "applied" } },
            ],
          },
        ],
        onError: {
          target: "aborted",
          actions: [
            { type: "fact", params: abortedFact },
            { type: "replyToRequest", params: { outcome: "applied" } },
          ],
        },
      },
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
        input: ({ context }) => ({
          agentId: context.input.agentId,
          sandboxId: context.input.sandboxId,
          ending: context.end,
        }),
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
