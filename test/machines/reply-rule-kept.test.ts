import { describe, it } from "node:test";
import { assertReplyRule, STARTS } from "./reply-check.ts";

// The reply rule (reply-check.ts) from the starts of keepAlive agents; the others are reply-rule.test.ts.
describe("reply rule: every control is answered by exactly one member.reply (model-based), keepAlive agents", () => {
  it("holds from every reachable state, for every control, along every continuation", (t) => {
    assertReplyRule(
      t,
      STARTS.filter((start) => start.keepAlive),
    );
  });
});
