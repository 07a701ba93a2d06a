import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startDaemon, waitForState } from "../support/daemon.ts";
import { openEvents } from "../support/sse-client.ts";

describe("limits over HTTP", () => {
  it("ends a turn that stays quiet past SWARM_TURN_MAX_MS: no text so far, so the result is failed", async (t) => {
    const d = await startDaemon({ turnMaxMs: 1_500 });
    t.after(() => d.stop());
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "quiet", script: [{ tool: "bash", args: { command: "sleep 60" } }] },
        prompt: "go",
      })
    ).body;
    const started = Date.now();
    const result = await d.call("GET", `/agents/${created.rootAgentId}/result?wait=60`);
    assert.ok(Date.now() - started < 20_000, "aborted long before the tool would end");
    assert.deepEqual(result.body, {
      agentId: created.rootAgentId,
      state: "settled",
      outcome: "failed",
      resultRef: null,
      result: null,
    });
    await waitForState(d, created.rootAgentId, "done");
    const events = await openEvents(d.url, created.runId);
    const ended = await events.waitFor((m) => m.event === "agent_ended");
    events.close();
    assert.equal(ended.data.outcome, "failed");
    assert.match(String(ended.data.error), /quiet-turn limit/);
  });

  it("cuts an event stream that stops reading at the slow-consumer limit; reconnecting with its last id loses nothing", async (t) => {
    const d = await startDaemon({ slowConsumerLimit: 20 });
    t.after(() => d.stop());
    // 16 KB per tool output, on every runtime (just-bash has no /dev/zero), so a client that stops
    // reading fills the response's buffer and the loopback socket's quickly.
    const big = "printf '%16000s' x";
    const batch = { tools: Array.from({ length: 150 }, () => ({ tool: "bash", args: { command: big } })) };
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "noisy", script: [batch, batch, { text: "done" }] },
        keepAlive: true,
      })
    ).body;
    await waitForState(d, created.rootAgentId, "running");
    const slow = await openEvents(d.url, created.runId);
    await slow.waitFor((m) => m.event === "agent_state_changed");
    slow.response.pause(); // stop reading: the socket fills up
    await d.call("POST", `/agents/${created.rootAgentId}/prompt`, { text: "go" });
    assert.equal((await d.call("GET", `/agents/${created.rootAgentId}/result?wait=120`)).body.result, "done");
    // Read again: what the server had sent before it cut the stream arrives, then the end.
    slow.response.resume();
    await slow.waitUntil(() => slow.ended, 30_000, "the server to cut the slow stream");
    const lastSeen = Math.max(...slow.messages.filter((m) => m.id !== undefined).map((m) => m.id!));
    const total = (await d.call("GET", `/runs/${created.runId}`)).body.asOf;
    assert.ok(lastSeen < total, `the slow client was cut before the end (${lastSeen} of ${total})`);

    const resumed = await openEvents(d.url, created.runId, { lastEventId: lastSeen });
    await resumed.waitFor((m) => m.id === total);
    resumed.close();
    const ids = resumed.messages.filter((m) => m.id !== undefined).map((m) => m.id);
    assert.deepEqual(
      ids,
      Array.from({ length: total - lastSeen }, (_, i) => lastSeen + 1 + i),
      "nothing persisted was lost",
    );
  });
});
