/**
 * Admission control over HTTP: a burst of spawns is started a few at a time, every waiting agent
 * shows its place in the line, and none is lost to a start deadline.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";

const SLOTS = 2;
const CHILDREN = 12;

/** The runtime, counting harness starts under way at once. */
function countingStarts(runtime: SandboxRuntime) {
  const counts = { now: 0, most: 0, started: 0 };
  const counted: SandboxRuntime = {
    ...runtime,
    async startHarness(sandboxId, signal) {
      counts.now++;
      counts.most = Math.max(counts.most, counts.now);
      try {
        await runtime.startHarness(sandboxId, signal);
        counts.started++;
      } finally {
        counts.now--;
      }
    },
  };
  return { counted, counts };
}

describe("admission control of sandbox starts", () => {
  let d: Daemon;
  let counts: { now: number; most: number; started: number };
  before(async () => {
    d = await startDaemon({
      startConcurrency: SLOTS,
      runtime: (dataDir) => {
        const made = countingStarts(
          createProcessRuntime({ dataDir, logger: { info: () => undefined, warn: () => undefined } }),
        );
        counts = made.counts;
        return made.counted;
      },
    });
  });
  after(() => d.stop());

  it(`${CHILDREN} children spawned at once start ${SLOTS} at a time, show their place in the line, and all run`, async () => {
    const created = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
    await waitForState(d, created.rootAgentId, "running");
    const spawned = await Promise.all(
      Array.from({ length: CHILDREN }, (_, i) =>
        d.call("POST", `/runs/${created.runId}/agents`, {
          parentAgentId: created.rootAgentId,
          spec: { name: `child-${i}`, script: [{ text: `done ${i}` }] },
          prompt: "go",
          keepAlive: true,
        }),
      ),
    );
    assert.deepEqual(
      spawned.map((s) => s.status),
      Array(CHILDREN).fill(202),
    );
    const ids = spawned.map((s) => s.body.agentId as string);

    // While the first ones start, the others wait in line, numbered from 1.
    const snapshot = (await d.call("GET", `/runs/${created.runId}`)).body;
    const waiting = (snapshot.agents as Json[]).filter((a) => a.queuePosition !== undefined);
    assert.ok(waiting.length >= CHILDREN - SLOTS - 2, `most children wait for a slot (${waiting.length} waiting)`);
    assert.deepEqual(
      waiting.map((a) => a.queuePosition).sort((a: number, b: number) => a - b),
      Array.from({ length: waiting.length }, (_, i) => i + 1),
    );
    assert.ok(waiting.every((a) => a.state === "provisioning"));
    const last = waiting.find((a) => a.queuePosition === waiting.length);
    assert.equal(
      (await d.call("GET", `/agents/${last.agentId}`)).body.queuePosition !== undefined,
      true,
      "the agent view shows it too",
    );

    for (const id of ids) await waitForState(d, id, "running", 180_000);
    for (const id of ids) {
      const view = (await d.call("GET", `/agents/${id}`)).body;
      assert.equal(view.outcome, null, `${id} was not lost`);
      assert.equal(view.queuePosition, undefined, "out of the line once started");
    }
    assert.ok(counts.most <= SLOTS, `at most ${SLOTS} starts at once (saw ${counts.most})`);
    assert.equal(counts.started, CHILDREN + 1);
    await d.call("POST", `/agents/${created.rootAgentId}/stop`, { scope: "subtree" });
  });

  it("a child stopped while it waits for a slot leaves the line and never starts", async () => {
    const created = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
    await waitForState(d, created.rootAgentId, "running");
    const before = counts.started;
    const spawned = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        d.call("POST", `/runs/${created.runId}/agents`, {
          parentAgentId: created.rootAgentId,
          spec: { name: `c${i}`, script: [] },
          keepAlive: true,
        }),
      ),
    );
    const lastId = spawned[5]!.body.agentId as string;
    assert.notEqual((await d.call("GET", `/agents/${lastId}`)).body.queuePosition, undefined, "the last one waits");
    const stopped = await d.call("POST", `/agents/${lastId}/stop`, {});
    assert.equal(stopped.body.results[0].outcome, "applied");
    await waitForState(d, lastId, "aborted");
    for (const s of spawned.slice(0, 5)) await waitForState(d, s.body.agentId, "running", 120_000);
    assert.equal(counts.started - before, 5, "the stopped child's harness never started");
    assert.equal(
      (await d.call("GET", `/runs/${created.runId}`)).body.agents.some((a: Json) => a.queuePosition !== undefined),
      false,
    );
    await d.call("POST", `/agents/${created.rootAgentId}/stop`, { scope: "subtree" });
  });
});
