import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { enqueueActions } from "xstate";
import { agentMachine } from "../../machines/agent.machine.ts";
import type { ControlOutcome, Delivery } from "../../machines/agent.types.ts";
import { checkReplyRule, R, STARTS } from "./reply-check.ts";

describe("reply rule check (reply-check.ts)", () => {
  // The check must fail when the rule breaks: the same check on the machine with some replies
  // dropped, and with one doubled (both breaches the real machine does not have).
  it("catches replies that are never sent and a reply sent twice", () => {
    const noNoop = agentMachine.provide({
      actions: {
        reply: enqueueActions(
          (
            { context, enqueue },
            params: { requestId: string; outcome: ControlOutcome; error?: string; delivery?: Delivery },
          ) => {
            if (params.requestId !== "" && params.outcome !== "noop")
              enqueue.sendParent({ type: "member.reply", agentId: context.input.agentId, ...params });
          },
        ),
      },
    });
    const missing = checkReplyRule(noNoop, STARTS.slice(0, 1), "supervisor");
    for (const pair of [
      '{"live":"paused"} + control.pause(',
      '"done" + control.stop(',
      '"aborted" + control.resume(',
    ]) {
      const found = missing.breaches.some(
        (b) => b.startsWith(pair) && b.endsWith(`"${R}" is never answered (nothing left in flight)`),
      );
      assert.ok(found, `no breach for ${pair}…) among:\n${missing.breaches.join("\n")}`);
    }

    const twice = agentMachine.provide({
      actions: {
        queueSteer: enqueueActions(({ context, event, enqueue }) => {
          if (event.type !== "control.steer") return;
          enqueue.assign({ steers: [...context.steers, event.message] });
          for (let i = 0; i < 2; i++)
            enqueue.sendParent({
              type: "member.reply",
              agentId: context.input.agentId,
              requestId: event.requestId,
              outcome: "applied",
              delivery: "queued",
            });
        }),
      },
    });
    const doubled = checkReplyRule(twice, STARTS.slice(0, 1), "supervisor");
    assert.ok(
      doubled.breaches.includes(
        `{"live":"paused"} + control.steer(requestId="${R}" message="m") ⇒ a member.reply for "${R}", which has no unanswered control`,
      ),
      doubled.breaches.join("\n"),
    );
  });
});
