import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BULK_SLICE_MS, bulkTurn } from "../../actors/bulk-turn.ts";

/** Keep the thread busy for `ms`, as a spawn's synchronous work does. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("bulk work's turn", () => {
  it("lets a timer that came due run in the middle of a burst, and keeps the burst's order", async () => {
    const order: Array<number | "timer"> = [];
    const tasks = 20 * BULK_SLICE_MS;
    setTimeout(() => order.push("timer"), 0);
    await Promise.all(
      Array.from({ length: tasks }, async (_, i) => {
        await bulkTurn();
        busy(1);
        order.push(i);
      }),
    );
    const timer = order.indexOf("timer");
    assert.ok(timer >= 0 && timer < tasks, `the timer ran after ${timer} of ${tasks} tasks`);
    assert.deepEqual(
      order.filter((x) => x !== "timer"),
      Array.from({ length: tasks }, (_, i) => i),
    );
  });
});
