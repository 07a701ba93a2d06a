import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fakeEffects, flush, startRun } from "./fakes.ts";

describe("agent machine", () => {
  it("provisions, runs its prompt, settles the result and ends done when idle", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a", prompt: "hello" });
    await flush();
    assert.deepEqual(fx.calls, ["provision:a", "harness.prompt:a"]);
    fx.harnesses.get("a")!.send({ type: "harness.settled", outcome: "success", text: "hi", hseq: 1 });
    await flush();
    assert.equal(r.stateOf("a"), '"done"');
    assert.deepEqual(
      r.facts.map((f) => f.fact.kind),
      ["provisioned", "state", "settled", "ended"],
    );
    assert.deepEqual(r.facts.at(-1)?.fact, { kind: "ended", outcome: "success" });
    assert.ok(fx.calls.includes("close:a"), "a finished agent's sandbox is released");
  });

  it("stays live and idle without a prompt, and with keepAlive after its turn", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root" });
    r.add({ agentId: "kept", prompt: "x", keepAlive: true });
    await flush();
    fx.harnesses.get("kept")!.send({ type: "harness.settled", outcome: "success", text: "x", hseq: 1 });
    await flush();
    assert.equal(r.stateOf("root"), '{"live":{"running":"idle"}}');
    assert.equal(r.stateOf("kept"), '{"live":{"running":"idle"}}');
  });

  it("a failed turn settles failed and ends the agent done/failed", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a", prompt: "go" });
    await flush();
    fx.harnesses.get("a")!.send({ type: "harness.settled", outcome: "failed", text: null, error: "model exploded", hseq: 1 });
    await flush();
    assert.deepEqual(r.facts.find((f) => f.fact.kind === "settled")?.fact, { kind: "settled", outcome: "failed", text: null, hseq: 1 });
    assert.deepEqual(r.facts.at(-1)?.fact, { kind: "ended", outcome: "failed", error: "model exploded" });
  });

  it("aborts a turn that stays quiet past the limit, counting only unpaused time", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a", prompt: "go", turnMaxMs: 1_000 });
    await flush();
    const h = fx.harnesses.get("a")!;
    r.clock.increment(900);
    h.send({ type: "harness.activity" }); // activity restarts the quiet clock
    r.clock.increment(900);
    assert.ok(!h.commands.some((c) => c.type === "harness.abort"));
    r.run.send({ type: "control", request: { requestId: "p", op: "pause", members: [{ agentId: "a", by: "operator" }] } });
    await flush();
    r.clock.increment(5_000); // paused time does not count
    assert.ok(!h.commands.some((c) => c.type === "harness.abort"));
    r.run.send({ type: "control", request: { requestId: "q", op: "resume", members: [{ agentId: "a", by: "operator" }] } });
    await flush();
    r.clock.increment(1_000);
    assert.ok(h.commands.some((c) => c.type === "harness.abort"), "quiet turn aborted");
    h.send({ type: "harness.settled", outcome: "aborted", text: "partial", hseq: 1 });
    await flush();
    assert.deepEqual(r.facts.find((f) => f.fact.kind === "settled")?.fact, { kind: "settled", outcome: "success", text: "partial", hseq: 1 });
  });

  it("answers pause on a paused agent with noop and reports a freeze failure", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a" });
    r.add({ agentId: "b" });
    await flush();
    r.run.send({ type: "control", request: { requestId: "1", op: "pause", members: [{ agentId: "a", by: "operator" }] } });
    await flush();
    r.run.send({ type: "control", request: { requestId: "2", op: "pause", members: [{ agentId: "a", by: "operator" }] } });
    fx.failFreezeOf("b");
    r.run.send({ type: "control", request: { requestId: "3", op: "pause", members: [{ agentId: "b", by: "operator" }] } });
    await flush();
    assert.deepEqual(r.done.map((d) => d.results), [
      [{ agentId: "a", outcome: "applied" }],
      [{ agentId: "a", outcome: "noop" }],
      [{ agentId: "b", outcome: "failed", error: "freezer broke" }],
    ]);
    assert.equal(r.stateOf("b"), '{"live":{"running":"idle"}}');
  });
});
