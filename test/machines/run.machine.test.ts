import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stopRun } from "../../machines/run.machine.ts";
import { byDepth } from "../../machines/tree.ts";
import { fakeEffects, flush, startRun } from "./fakes.ts";

describe("run machine", () => {
  const parents = { root: null, a: "root", b: "root", a1: "a" } as const;

  it("groups a subtree by depth, each depth in spawn order", () => {
    assert.deepEqual(byDepth("root", parents), [["root"], ["a", "b"], ["a1"]]);
    assert.deepEqual(byDepth("a", parents), [["a"], ["a1"]]);
  });

  it("sends to every member of a wave together, and the next wave only once each of them answered", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root" });
    r.add({ agentId: "a" }, "root");
    r.add({ agentId: "b" }, "root");
    r.add({ agentId: "a1" }, "a");
    await flush();
    let release = () => {};
    fx.holdFreeze(new Promise<void>((resolve) => (release = resolve)));
    const waves = byDepth("root", parents).map((level) =>
      level.map((agentId) => ({ agentId, by: agentId === "root" ? ("operator" as const) : ("cascade" as const) })),
    );
    r.run.send({ type: "control", request: { requestId: "p", op: "pause", waves } });
    await flush();
    assert.deepEqual(fx.freezing, ["root"], "the children wait for their parent's answer");
    // The root's freeze ends; its children's freezes begin and hang until released again.
    const first = release;
    fx.holdFreeze(new Promise<void>((resolve) => (release = resolve)));
    first();
    await flush();
    await flush();
    assert.deepEqual(fx.freezing, ["root", "a", "b"], "a and b got the pause together");
    assert.equal(r.done.length, 0);
    release();
    for (let i = 0; i < 4; i += 1) await flush();
    assert.deepEqual(fx.freezing, ["root", "a", "b", "a1"], "a1 once a and b answered");
    assert.deepEqual(
      r.done[0]!.results.map((m) => [m.agentId, m.outcome]),
      [
        ["root", "applied"],
        ["a", "applied"],
        ["b", "applied"],
        ["a1", "applied"],
      ],
    );
  });

  it("sends a big wave a chunk at a time, yielding between chunks, and the next wave only once all of it answered", async () => {
    const fx = fakeEffects();
    const r = startRun(fx, undefined, undefined, 2);
    const kids = ["a", "b", "c", "d", "e"];
    r.add({ agentId: "root" });
    for (const id of kids) r.add({ agentId: id }, "root");
    r.add({ agentId: "a1" }, "a");
    await flush();
    const yields: string[] = [];
    r.run.on("control.yield", (e) => yields.push(e.requestId));
    const waves = [["root"], kids, ["a1"]].map((level) =>
      level.map((agentId) => ({ agentId, by: agentId === "root" ? ("operator" as const) : ("cascade" as const) })),
    );
    r.run.send({ type: "control", request: { requestId: "p", op: "pause", waves } });
    for (let i = 0; i < 4; i += 1) await flush();
    assert.deepEqual(fx.freezing, ["root", "a", "b"], "the wave stops after its first chunk until told to go on");
    assert.deepEqual(yields, ["p"]);
    // A continue for another request, or a stale one, sends nothing.
    r.run.send({ type: "control.continue", requestId: "other" });
    await flush();
    assert.deepEqual(fx.freezing, ["root", "a", "b"]);
    r.run.send({ type: "control.continue", requestId: "p" });
    for (let i = 0; i < 4; i += 1) await flush();
    assert.deepEqual(fx.freezing, ["root", "a", "b", "c", "d"], "a1 waits until the whole wave was sent");
    r.run.send({ type: "control.continue", requestId: "p" });
    for (let i = 0; i < 6; i += 1) await flush();
    assert.deepEqual(fx.freezing, ["root", ...kids, "a1"]);
    assert.deepEqual(yields, ["p", "p"]);
    assert.deepEqual(
      r.done[0]!.results.map((m) => [m.agentId, m.outcome]),
      ["root", ...kids, "a1"].map((id) => [id, "applied"]),
    );
  });

  it("carries a cascade out wave by wave, in order, and queues requests behind it", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root" });
    r.add({ agentId: "a" }, "root");
    r.add({ agentId: "a1" }, "a");
    await flush();
    fx.calls.length = 0;
    const waves = byDepth("root", { root: null, a: "root", a1: "a" }).map((level) =>
      level.map((agentId) => ({ agentId, by: agentId === "root" ? ("operator" as const) : ("cascade" as const) })),
    );
    r.run.send({ type: "control", request: { requestId: "p", op: "pause", waves } });
    r.run.send({
      type: "control",
      request: {
        requestId: "s",
        op: "stop",
        waves: ["a1", "a", "root"].map((agentId) => [{ agentId, by: "operator" as const }]),
      },
    });
    await flush();
    await flush();
    assert.deepEqual(fx.calls, ["freeze:root", "freeze:a", "freeze:a1", "close:a1", "close:a", "close:root"]);
    assert.deepEqual(
      r.done.map((d) => d.requestId),
      ["p", "s"],
    );
    assert.ok(r.done[1]!.results.every((m) => m.outcome === "applied"));
    const pausedReasons = r.facts
      .filter((f) => f.fact.kind === "state" && f.fact.to === "paused")
      .map((f) => [f.agentId, (f.fact as { reason: string }).reason]);
    assert.deepEqual(pausedReasons, [
      ["root", "operator"],
      ["a", "cascade"],
      ["a1", "cascade"],
    ]);
  });

  it("starts a waitFor child once its dependencies settle, and ends a parent when its last child ends", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root", prompt: "p" });
    r.add({ agentId: "dep", prompt: "d" }, "root");
    r.add({ agentId: "w", start: "spawning", prompt: "w" }, "root", ["dep"]);
    await flush();
    assert.equal(r.stateOf("w"), '{"unforked":"spawning"}');
    fx.harnesses.get("root")!.send({ type: "harness.settled", outcome: "success", text: "root", hseq: 1 });
    fx.harnesses.get("dep")!.send({ type: "harness.settled", outcome: "success", text: "dep", hseq: 1 });
    await flush();
    assert.ok(fx.calls.includes("provision:w"), "w forked after dep settled");
    assert.equal(r.stateOf("root"), '{"live":{"running":{"idle":"awake"}}}', "root waits for its live child");
    fx.harnesses.get("w")!.send({ type: "harness.settled", outcome: "success", text: "w", hseq: 1 });
    await flush();
    assert.equal(r.stateOf("w"), '"done"');
    assert.equal(r.stateOf("root"), '"done"');
  });

  it("a child not yet forked joins a subtree pause once forked", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root" });
    r.add({ agentId: "w", start: "spawning" }, "root", ["nobody-yet"]);
    await flush();
    r.run.send({
      type: "control",
      request: {
        requestId: "p",
        op: "pause",
        waves: [[{ agentId: "root", by: "operator" }], [{ agentId: "w", by: "cascade" }]],
      },
    });
    await flush();
    assert.deepEqual(
      r.done[0]!.results.map((m) => m.outcome),
      ["applied", "applied"],
    );
    r.run.send({ type: "agent.settled", agentId: "nobody-yet" });
    await flush();
    assert.equal(r.stateOf("w"), '{"live":"paused"}');
    assert.deepEqual(
      r.facts.filter((f) => f.agentId === "w" && f.fact.kind === "state").map((f) => (f.fact as { to: string }).to),
      ["provisioning", "running", "paused"],
    );
  });

  it("answers noop for members without an actor and tells no absent parent about its children", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    // A child restored live under a parent that had already ended (no actor for the parent).
    r.add({ agentId: "child", prompt: "p" }, "ended-parent");
    await flush();
    r.run.send({
      type: "control",
      request: { requestId: "s", op: "stop", waves: [[{ agentId: "ended-parent", by: "operator" }]] },
    });
    await flush();
    assert.deepEqual(r.done[0]!.results, [{ agentId: "ended-parent", outcome: "noop" }]);
    fx.harnesses.get("child")!.send({ type: "harness.settled", outcome: "success", text: "x", hseq: 1 });
    await flush();
    assert.equal(r.stateOf("child"), '"done"');
    assert.equal(r.run.getSnapshot().status, "active", "the supervisor is still running");
  });

  it("pauses a subtree best effort: a member whose freeze fails carries the reason and neither undoes nor blocks the others", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "root" });
    r.add({ agentId: "a" }, "root");
    r.add({ agentId: "a1" }, "a");
    await flush();
    fx.failFreezeOf("a");
    const waves = byDepth("root", { root: null, a: "root", a1: "a" }).map((level) =>
      level.map((agentId) => ({ agentId, by: agentId === "root" ? ("operator" as const) : ("cascade" as const) })),
    );
    r.run.send({ type: "control", request: { requestId: "p", op: "pause", waves } });
    await flush();
    await flush();
    assert.deepEqual(r.done[0]!.results, [
      { agentId: "root", outcome: "applied" },
      { agentId: "a", outcome: "failed", error: "freezer broke" },
      { agentId: "a1", outcome: "applied" },
    ]);
    assert.deepEqual(
      [r.stateOf("root"), r.stateOf("a"), r.stateOf("a1")],
      ['{"live":"paused"}', '{"live":{"running":{"idle":"awake"}}}', '{"live":"paused"}'],
    );
  });

  it("answers a stop cascade whose parent began finishing when its last child was stopped", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "p", prompt: "go" });
    r.add({ agentId: "c", prompt: "work" }, "p");
    await flush();
    fx.harnesses.get("p")!.send({ type: "harness.settled", outcome: "success", text: "planned", hseq: 1 });
    await flush();
    // Leaves first: stopping c ends p's last child, so p is finishing when its own stop arrives.
    r.run.send({
      type: "control",
      request: {
        requestId: "s",
        op: "stop",
        waves: [[{ agentId: "c", by: "operator" }], [{ agentId: "p", by: "operator" }]],
      },
    });
    for (let i = 0; i < 4; i += 1) await flush();
    assert.deepEqual(r.done[0]?.results, [
      { agentId: "c", outcome: "applied" },
      { agentId: "p", outcome: "noop" },
    ]);
    assert.equal(r.stateOf("p"), '"done"', "p keeps the outcome it finished with");
    r.run.send({
      type: "control",
      request: { requestId: "after", op: "pause", waves: [[{ agentId: "p", by: "operator" }]] },
    });
    await flush();
    assert.deepEqual(
      r.done.map((d) => d.requestId),
      ["s", "after"],
      "later controls are not stuck behind it",
    );
  });

  it("a restored parent counts its restored live children once and ends after the last one", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    // As recovery restores: parents first, each with the live children the ledger shows.
    r.add({ agentId: "p", restored: { pausedBy: null, turns: 1, inflight: 0, liveChildren: 1 } }, null, [], true);
    r.add({ agentId: "c", restored: { pausedBy: null, turns: 1, inflight: 1, liveChildren: 0 } }, "p", [], true);
    await flush();
    assert.equal(r.stateOf("p"), '{"live":{"running":{"idle":"awake"}}}', "p waits for c");
    fx.harnesses.get("c")!.send({ type: "harness.settled", outcome: "success", text: "x", hseq: 2 });
    await flush();
    await flush();
    assert.equal(r.stateOf("c"), '"done"');
    assert.equal(r.stateOf("p"), '"done"');
  });

  it("records a member that never answers as failed after the member timeout, and later controls still run", async () => {
    const fx = fakeEffects();
    const r = startRun(fx, undefined, 5_000);
    r.add({ agentId: "a" });
    r.add({ agentId: "b" });
    await flush();
    fx.holdFreeze(new Promise<void>(() => undefined)); // a freeze that hangs forever
    const waves = [[{ agentId: "a", by: "operator" as const }]];
    r.run.send({ type: "control", request: { requestId: "hung", op: "pause", waves } });
    r.run.send({
      type: "control",
      request: { requestId: "next", op: "stop", waves: [[{ agentId: "b", by: "operator" as const }]] },
    });
    await flush();
    assert.equal(r.done.length, 0, "nothing answers while the member may still reply");
    r.clock.increment(4_999);
    await flush();
    assert.equal(r.done.length, 0);
    r.clock.increment(1);
    await flush();
    await flush();
    assert.deepEqual(r.done[0]?.results, [
      { agentId: "a", outcome: "failed", error: "no answer from agent a within 5000 ms" },
    ]);
    assert.equal(r.done[1]?.requestId, "next", "the queued stop is carried out, not stuck behind the hung pause");
    assert.equal(r.done[1]?.results[0]?.outcome, "applied");
  });

  it("in a wave, records only the member that never answers as failed, in the wave's order", async () => {
    const fx = fakeEffects();
    const r = startRun(fx, undefined, 5_000);
    r.add({ agentId: "a" });
    r.add({ agentId: "b" });
    await flush();
    r.run.send({
      type: "control",
      request: { requestId: "first", op: "pause", waves: [[{ agentId: "b", by: "operator" }]] },
    });
    await flush();
    fx.holdFreeze(new Promise<void>(() => undefined)); // a's freeze hangs; b is already paused
    const waves = [
      [
        { agentId: "a", by: "cascade" as const },
        { agentId: "b", by: "cascade" as const },
      ],
    ];
    r.run.send({ type: "control", request: { requestId: "hung", op: "pause", waves } });
    await flush();
    assert.equal(r.done.length, 1, "b answered, a may still answer");
    r.clock.increment(5_000);
    await flush();
    assert.deepEqual(r.done[1]?.results, [
      { agentId: "a", outcome: "failed", error: "no answer from agent a within 5000 ms" },
      { agentId: "b", outcome: "noop" },
    ]);
  });

  it("waits 60 s for a member by default", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a" });
    await flush();
    fx.holdFreeze(new Promise<void>(() => undefined));
    r.run.send({
      type: "control",
      request: { requestId: "hung", op: "pause", waves: [[{ agentId: "a", by: "operator" as const }]] },
    });
    r.clock.increment(59_999);
    await flush();
    assert.equal(r.done.length, 0);
    r.clock.increment(1);
    await flush();
    assert.equal(r.done[0]?.results[0]?.outcome, "failed");
  });

  it("stopping the run stops every agent actor it holds, ended ones included", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "live" });
    r.add({ agentId: "once", prompt: "p" });
    await flush();
    fx.harnesses.get("once")!.send({ type: "harness.settled", outcome: "success", text: "x", hseq: 1 });
    await flush();
    assert.equal(r.stateOf("once"), '"done"');
    stopRun(r.run);
    assert.equal(r.run.getSnapshot().status, "stopped");
    assert.deepEqual(
      ["live", "once"].map((id) => r.agent(id)?.getSnapshot().status),
      ["stopped", "stopped"],
    );
  });
});
