import { describe, it } from "node:test";
import { assertReplyRule, STARTS } from "./reply-check.ts";

// The reply rule (reply-check.ts) from the starts of agents that end after their work; the starts
// of keepAlive agents are reply-rule-kept.test.ts, so the two halves run on two cores at once.
describe("reply rule: every control is answered by exactly one member.reply (model-based), agents that end after their work", () => {
  it("holds from every reachable state, for every control, along every continuation", (t) => {
    assertReplyRule(
      t,
      STARTS.filter((start) => !start.keepAlive),
    );
  });
});
