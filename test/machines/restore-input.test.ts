/**
 * Issue 22, item 8, at the level of the machine's input: what restore tells a restored agent about
 * its turns (`restoredTurns`, a pure function of the ledger), and how the machine ends with it.
 * test/faults/spawn-prompt-restart.test.ts and chaos.test.ts drive the same windows through a daemon.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { restoredTurns } from "../../actors/run/restore-plan.ts";
import { fakeEffects, flush, startRun } from "./fakes.ts";

describe("restored turns", () => {
  it("owes the spawn prompt when nothing shows the harness took it, and hands it over only when no harness event was recorded", () => {
    // Killed before the harness answered the spawn prompt: it may have it or not; its log says which.
    assert.deepEqual(restoredTurns({ spawnPrompt: "go", acknowledged: 0, settled: 0, hseq: 0 }), {
      turns: 1,
      inflight: 1,
      resend: "go",
    });
    // A harness event was recorded: a turn began, so the harness had the prompt; its turn is owed.
    assert.deepEqual(restoredTurns({ spawnPrompt: "go", acknowledged: 0, settled: 0, hseq: 7 }), {
      turns: 1,
      inflight: 1,
    });
  });

  it("counts acknowledged prompts and settled turns as before", () => {
    assert.deepEqual(restoredTurns({ spawnPrompt: "go", acknowledged: 1, settled: 0, hseq: 4 }), {
      turns: 1,
      inflight: 1,
    });
    assert.deepEqual(restoredTurns({ spawnPrompt: "go", acknowledged: 0, settled: 1, hseq: 9 }), {
      turns: 1,
      inflight: 0,
    });
    assert.deepEqual(restoredTurns({ spawnPrompt: "go", acknowledged: 3, settled: 2, hseq: 30 }), {
      turns: 3,
      inflight: 1,
    });
    // No spawn prompt: nothing is owed, the agent waits to be prompted.
    assert.deepEqual(restoredTurns({ spawnPrompt: null, acknowledged: 0, settled: 0, hseq: 0 }), {
      turns: 0,
      inflight: 0,
    });
  });
});

describe("a restored agent's machine", () => {
  it("owing its spawn prompt: waits for that turn, passes the prompt to its harness actor, then ends", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "a", restored: { pausedBy: null, liveChildren: 0, ...restoredTurns(owed) } }, null, [], true);
    await flush();
    assert.equal(r.stateOf("a"), '{"live":{"running":{"turn":"clock"}}}');
    assert.deepEqual(
      fx.harnesses.get("a")?.commands.filter((c) => c.type === "harness.resend"),
      [{ type: "harness.resend", text: "go" }],
      "the spawn prompt goes to its harness actor, to be sent unless the harness's log shows it taken",
    );
    fx.harnesses.get("a")!.send({ type: "harness.settled", outcome: "success", text: "done", hseq: 30 });
    await flush();
    assert.equal(r.stateOf("a"), '"done"');
  });

  it("with a turn it did not know it owed (restored as never prompted): ends once that turn settles and its children end", async () => {
    // What restore used to hand over in that window: the stuck mid, whose turn settled
    // (replayed by its harness), whose leaves ended, and that stayed `running` for good.
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "mid", restored: { pausedBy: null, turns: 0, inflight: 0, liveChildren: 1 } }, null, [], true);
    r.add({ agentId: "leaf", restored: { pausedBy: null, turns: 1, inflight: 1, liveChildren: 0 } }, "mid", [], true);
    await flush();
    fx.harnesses.get("mid")!.send({ type: "harness.settled", outcome: "success", text: "mid done", hseq: 48 });
    await flush();
    assert.equal(r.stateOf("mid"), '{"live":{"running":{"idle":"awake"}}}', "its leaf is still live");
    fx.harnesses.get("leaf")!.send({ type: "harness.settled", outcome: "success", text: "leaf done", hseq: 26 });
    await flush();
    await flush();
    assert.equal(r.stateOf("leaf"), '"done"');
    assert.equal(r.stateOf("mid"), '"done"');
  });
});

describe("where an agent's harness actor takes up", () => {
  it("a fresh agent's from nothing recorded, a restored one's from the restart's reading of the ledger, a half-made one's from its own reading", async () => {
    const fx = fakeEffects();
    const r = startRun(fx);
    r.add({ agentId: "fresh" }, null, [], true);
    const recorded = { hseq: 41, prompts: 2 };
    r.add(
      { agentId: "back", restored: { pausedBy: null, turns: 2, inflight: 0, liveChildren: 0, recorded } },
      null,
      [],
      true,
    );
    r.add({ agentId: "older", restored: { pausedBy: null, turns: 2, inflight: 0, liveChildren: 0 } }, null, [], true);
    await flush();
    // Only its own harness actor writes those counts: a new agent's are 0 without a ledger read.
    assert.deepEqual(fx.harnesses.get("fresh")?.input.recorded, { hseq: 0, prompts: 0 });
    assert.deepEqual(fx.harnesses.get("back")?.input.recorded, recorded);
    assert.equal(fx.harnesses.get("older")?.input.recorded, undefined, "no reading given: the actor reads the ledger");
  });
});

const owed = { spawnPrompt: "go", acknowledged: 0, settled: 0, hseq: 0 };
