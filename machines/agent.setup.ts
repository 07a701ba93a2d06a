import { enqueueActions, setup } from "xstate";
import type { AgentContext, ReplyParams } from "./agent.context.ts";
import { effectSlots } from "./agent.effects.ts";
import type { AgentEmitted, AgentEvent, AgentInput, AgentTag, ControlOutcome, Delivery, Fact } from "./agent.types.ts";

/**
 * What the agent machine can do: its types, effects, guards and actions. The states that use them
 * are in `agent.machine.ts`.
 */
export const agentSetup = setup({
  types: {
    tags: {} as AgentTag,
    context: {} as AgentContext,
    input: {} as AgentInput,
    events: {} as AgentEvent,
    emitted: {} as AgentEmitted,
  },
  actors: effectSlots,
  delays: {
    quietLimit: ({ context }) => context.input.turnMaxMs,
  },
  guards: {
    hasPendingPause: ({ context }) => context.pendingPause !== null,
    busy: ({ context }) => context.inflight > 0,
    /** Prompts or steers wait for a running (and awake) harness. */
    hasQueued: ({ context }) => context.prompts.length > 0 || context.steers.length > 0,
    asleep: ({ context }) => context.asleep,
    /** A restored agent's spawn prompt waits to be handed over again. */
    hasResend: ({ context }) => context.resend !== null,
    /** A control was deferred until a wake or a reattach ends. */
    hasRequest: ({ context }) => context.request !== null,
    /** A model call the gateway holds, an approval that waits or an unreachable node: the quiet-turn clock stands still. */
    holding: ({ context }) => context.holds.gateway > 0 || context.holds.approvals > 0 || context.holds.unreachable,
    /** A draining agent whose accepted work is done (and, in a subtree drain, whose children ended). */
    drained: ({ context }) =>
      context.draining !== null &&
      context.inflight === 0 &&
      context.prompts.length === 0 &&
      context.steers.length === 0 &&
      context.steering.length === 0 &&
      (!context.draining.subtree || context.liveChildren === 0),
    turnFailed: ({ context }) => context.failure !== null,
    canFinish: ({ context }) =>
      context.turns > 0 &&
      context.inflight === 0 &&
      context.liveChildren === 0 &&
      !context.input.keepAlive &&
      context.prompts.length === 0 &&
      context.steers.length === 0 &&
      context.steering.length === 0,
    resumeAfterPause: ({ context }) => context.resumeAfterPause !== null,
  },
  actions: {
    /**
     * State a fact: emitted for the ledger, and a turn's result or the agent's end also told to the
     * supervisor (for `waitFor` and the parent's count of live children).
     */
    fact: enqueueActions(({ context, enqueue }, fact: Fact) => {
      enqueue.emit({ type: "fact", agentId: context.input.agentId, fact });
      if (fact.kind === "settled") enqueue.sendParent({ type: "agent.settled", agentId: context.input.agentId });
      if (fact.kind === "ended")
        enqueue.sendParent({
          type: "agent.ended",
          agentId: context.input.agentId,
          parentAgentId: context.input.parentAgentId,
        });
    }),
    // An empty requestId marks work the machine started itself (a deferred pause, a queued steer): nobody waits for it.
    reply: enqueueActions(({ context, enqueue }, params: ReplyParams) => {
      if (params.requestId !== "")
        enqueue.sendParent({ type: "member.reply", agentId: context.input.agentId, ...params });
    }),
    /** A stop of an agent whose node swarmd cannot reach is answered at once; it ends when the node answers. */
    replyIfUnreachable: enqueueActions(({ context, enqueue }) => {
      if (!context.holds.unreachable || !context.request) return;
      if (context.request.requestId !== "")
        enqueue.sendParent({
          type: "member.reply",
          agentId: context.input.agentId,
          requestId: context.request.requestId,
          outcome: "applied",
        });
      enqueue.assign({ request: null });
    }),
    replyToRequest: enqueueActions(({ context, enqueue }, params: { outcome: ControlOutcome; error?: string }) => {
      if (context.request && context.request.requestId !== "") {
        enqueue.sendParent({
          type: "member.reply",
          agentId: context.input.agentId,
          requestId: context.request.requestId,
          ...params,
        });
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
    /**
     * A turn settled: its result is stated; a quiet-limit abort keeps the text so far (failed when
     * there is none). A turn the machine did not hand over (accepted by the harness before a restart
     * and not yet in the ledger's count) still counts as a turn run.
     */
    settleTurn: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "harness.settled") return;
      const outcome = event.outcome === "aborted" ? (event.text ? "success" : "failed") : event.outcome;
      enqueue.emit({
        type: "fact",
        agentId: context.input.agentId,
        fact: { kind: "settled", outcome, text: event.text, hseq: event.hseq },
      });
      enqueue.sendParent({ type: "agent.settled", agentId: context.input.agentId });
      const reason =
        event.error ?? (context.quietAbort ? "the turn went quiet past the quiet-turn limit" : "the turn failed");
      enqueue.assign({
        inflight: Math.max(0, context.inflight - 1),
        // A turn the machine did not know it owed (its prompt's acknowledgement died with an
        // earlier daemon) is still a turn run: without it `canFinish` would wait for a prompt forever.
        turns: context.inflight === 0 ? context.turns + 1 : context.turns,
        quietAbort: false,
        failure: outcome === "failed" ? reason : context.failure,
      });
    }),
    steerAnswered: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "harness.steered") return;
      enqueue.assign({ steering: context.steering.filter((id) => id !== event.requestId) });
      // A queued steer handed over on resume (empty requestId) has been answered already.
      const reply = (answer: { outcome: ControlOutcome; error?: string; delivery?: Delivery }) => {
        if (event.requestId !== "")
          enqueue.sendParent({
            type: "member.reply",
            agentId: context.input.agentId,
            requestId: event.requestId,
            ...answer,
          });
      };
      if (!event.ok && !event.idle) {
        reply({ outcome: "failed", error: event.error ?? "the harness did not accept the message" });
        return;
      }
      if (!event.ok) {
        // The turn ended while the steer was on its way: the message starts a turn instead.
        enqueue.sendTo("harness", { type: "harness.prompt", text: event.message });
        enqueue.assign({ inflight: context.inflight + 1, turns: context.turns + 1 });
      }
      enqueue.emit({ type: "fact", agentId: context.input.agentId, fact: { kind: "steered", message: event.message } });
      reply({ outcome: "applied", delivery: event.ok ? "steer" : "turn" });
    }),
    /** The freeze finished: the agent is paused by whom its request says. */
    markPaused: enqueueActions(({ context, enqueue }) => {
      const by = context.request?.by ?? "operator";
      enqueue.emit({
        type: "fact",
        agentId: context.input.agentId,
        fact: { kind: "state", from: "running", to: "paused", reason: by },
      });
      enqueue.assign({ pausedBy: by });
    }),
    /** The harness hibernated (or was found hibernated): stated once, whatever state the agent is in. */
    markAsleep: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "harness.slept" || context.asleep) return;
      enqueue.emit({
        type: "fact",
        agentId: context.input.agentId,
        fact: { kind: "hibernated", sessionStats: event.sessionStats },
      });
      enqueue.assign({ asleep: true });
    }),
    /** The harness runs again. */
    markAwake: enqueueActions(({ context, enqueue }) => {
      if (!context.asleep) return;
      enqueue.emit({ type: "fact", agentId: context.input.agentId, fact: { kind: "woke" } });
      enqueue.assign({ asleep: false });
    }),
    /** Leaving `live` with steers unanswered: the harness that would answer them is gone. */
    dropSteers: enqueueActions(({ context, enqueue }) => {
      for (const requestId of context.steering) {
        enqueue.sendParent({
          type: "member.reply",
          agentId: context.input.agentId,
          requestId,
          outcome: "failed",
          error: "the agent ended before the message reached it",
        });
      }
      enqueue.assign({ steering: [] });
    }),
    /**
     * Leaving `live` for good (lost, or stopped) while a pause or resume is under way or deferred:
     * its effect will never finish, so its request, and a resume waiting for it, are answered
     * `failed` now.
     */
    abandonRequests: enqueueActions(({ context, enqueue }, params: { error: string }) => {
      for (const requestId of [context.request?.requestId, context.resumeAfterPause]) {
        if (requestId)
          enqueue.sendParent({
            type: "member.reply",
            agentId: context.input.agentId,
            requestId,
            outcome: "failed",
            error: params.error,
          });
      }
      enqueue.assign({ request: null, resumeAfterPause: null });
    }),
    /**
     * A steer that waits. To an agent that is paused (or between paused and running) it is kept for
     * the next `running` (`queued`); to one with no turn running whose harness hibernates it is its
     * next turn, once awake (`turn`).
     */
    queueSteer: enqueueActions(({ context, event, enqueue }, params?: { delivery: "queued" | "turn" }) => {
      if (event.type !== "control.steer") return;
      const delivery = params?.delivery ?? "queued";
      if (delivery === "turn") enqueue.assign({ prompts: [...context.prompts, event.message] });
      else enqueue.assign({ steers: [...context.steers, event.message] });
      enqueue.emit({ type: "fact", agentId: context.input.agentId, fact: { kind: "steered", message: event.message } });
      enqueue.sendParent({
        type: "member.reply",
        agentId: context.input.agentId,
        requestId: event.requestId,
        outcome: "applied",
        delivery,
      });
    }),
    /** A pause or resume that must wait for a state's effect (a wake, a reattach): kept as the request, acted on when it ends. */
    deferRequest: enqueueActions(({ event, enqueue }) => {
      if (event.type === "control.pause") enqueue.assign({ request: { requestId: event.requestId, by: event.by } });
      if (event.type === "control.resume") enqueue.assign({ request: { requestId: event.requestId, by: "operator" } });
    }),
    /** Hand a restored agent's spawn prompt to its harness actor (its turn is counted already). */
    resend: enqueueActions(({ context, enqueue }) => {
      if (context.resend === null) return;
      enqueue.sendTo("harness", { type: "harness.resend", text: context.resend });
      enqueue.assign({ resend: null });
    }),
    queuePrompt: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === "prompt") enqueue.assign({ prompts: [...context.prompts, event.text] });
    }),
    startTurn: enqueueActions(({ context, enqueue }, params: { text: string }) => {
      enqueue.sendTo("harness", { type: "harness.prompt", text: params.text });
      enqueue.assign({ inflight: context.inflight + 1, turns: context.turns + 1 });
    }),
  },
});
