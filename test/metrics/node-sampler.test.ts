/**
 * The node gauges never hold a scrape on a slow runtime: `/metrics` answers while the runtime's
 * `nodes()` hangs (the node series absent, or the last answer while it is not too old), and shows
 * the new answer once there is one. `GET /nodes` answers `RUNTIME_UNAVAILABLE` instead of waiting.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { DaemonMetrics } from "../../src/metrics/daemon-metrics.ts";
import { NodeSampler } from "../../src/metrics/node-sampler.ts";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { nodesWithin } from "../../src/sandbox/node-list.ts";
import type { NodeInfo } from "../../src/sandbox/runtime.ts";

const node = (id: string, extra: Partial<NodeInfo> = {}): NodeInfo => ({
  id,
  hostname: `${id}.test`,
  state: "ready",
  availability: "active",
  sandboxes: 2,
  cpus: 8,
  memoryMiB: 16_384,
  reservedCpus: 1.5,
  reservedMemoryMiB: 3_072,
  engine: "reachable",
  ...extra,
});

/** A runtime's `nodes()` the test answers by hand: each call waits until `answer` or `fail`. */
function heldSource() {
  const waiting: Array<{ resolve: (nodes: NodeInfo[]) => void; reject: (err: Error) => void }> = [];
  let calls = 0;
  return {
    source: () =>
      new Promise<NodeInfo[]>((resolve, reject) => {
        calls++;
        waiting.push({ resolve, reject });
      }),
    answer(nodes: NodeInfo[]) {
      for (const w of waiting.splice(0)) w.resolve(nodes);
    },
    fail() {
      for (const w of waiting.splice(0)) w.reject(new Error("engine down"));
    },
    calls: () => calls,
  };
}

/** The node series of a scrape, `name{node="id"} value` each, in the order shown. */
async function nodeSeries(metrics: DaemonMetrics): Promise<string[]> {
  return (await metrics.registry.metrics()).split("\n").filter((line) => line.startsWith("swarmd_node_"));
}

describe("node gauges read at scrape time", () => {
  it("shows every node's gauges, labelled by node, from the runtime's answer", async () => {
    const metrics = new DaemonMetrics();
    metrics.watch({
      nodes: async () => [node("n1"), node("n2", { state: "down", engine: "unreachable", reason: "no route" })],
    });
    assert.deepEqual(await nodeSeries(metrics), [
      'swarmd_node_sandboxes{node="n1"} 2',
      'swarmd_node_sandboxes{node="n2"} 2',
      'swarmd_node_reserved_cpus{node="n1"} 1.5',
      'swarmd_node_reserved_cpus{node="n2"} 1.5',
      'swarmd_node_reserved_memory_bytes{node="n1"} 3221225472',
      'swarmd_node_reserved_memory_bytes{node="n2"} 3221225472',
      'swarmd_node_engine_reachable{node="n1"} 1',
      'swarmd_node_engine_reachable{node="n2"} 0',
      'swarmd_node_ready{node="n1"} 1',
      'swarmd_node_ready{node="n2"} 0',
    ]);
  });

  it("answers a scrape while the runtime hangs: no node series at first, then the answer once it came", async () => {
    const held = heldSource();
    const metrics = new DaemonMetrics({ nodeSampling: { waitMs: 20, freshMs: 0 } });
    metrics.watch({ nodes: held.source });
    assert.deepEqual(await nodeSeries(metrics), [], "absent, not zero, while there is no answer");
    assert.equal(held.calls(), 1, "the five gauges of one scrape ask once");
    assert.deepEqual(await nodeSeries(metrics), []);
    assert.equal(held.calls(), 1, "a call in flight is not asked again");
    held.answer([node("local")]);
    await new Promise((resolve) => setImmediate(resolve));
    // freshMs 0: the next scrape asks again; while that call hangs, the last answer is served.
    assert.ok((await nodeSeries(metrics)).includes('swarmd_node_sandboxes{node="local"} 2'));
    assert.equal(held.calls(), 2);
    held.answer([node("local", { sandboxes: 5 })]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok((await nodeSeries(metrics)).includes('swarmd_node_sandboxes{node="local"} 5'));
  });

  it("serves a fresh answer without asking again, and drops one too old to show", async () => {
    let now = 1_000_000;
    const held = heldSource();
    const sampler = new NodeSampler(held.source, { freshMs: 5_000, staleMs: 60_000, waitMs: 10, now: () => now });
    const first = sampler.read();
    held.answer([node("local")]);
    assert.deepEqual(await first, [node("local")]);
    now += 4_000;
    assert.deepEqual(await sampler.read(), [node("local")]);
    assert.equal(held.calls(), 1, "fresh: not asked again");
    now += 2_000;
    assert.deepEqual(await sampler.read(), [node("local")], "stale but not too old, while the new call hangs");
    held.fail();
    await new Promise((resolve) => setImmediate(resolve));
    now += 60_000;
    assert.equal(await sampler.read(), undefined, "older than staleMs: nothing rather than an old answer");
  });
});

describe("GET /nodes's bound on the runtime", () => {
  it("answers the runtime's nodes when it answers in time", async () => {
    const runtime = createMemoryRuntime();
    const [local] = await nodesWithin(runtime, 5_000);
    assert.equal(local?.id, "local");
    assert.equal(local?.sandboxes, 0);
  });

  it("rejects with RUNTIME_UNAVAILABLE when the runtime does not answer, even one that ignores the signal", async () => {
    const runtime = { ...createMemoryRuntime(), nodes: () => new Promise<NodeInfo[]>(() => undefined) };
    await assert.rejects(nodesWithin(runtime, 50), (err: unknown) => {
      assert.ok(isSwarmError(err, "RUNTIME_UNAVAILABLE"), String(err));
      assert.match(err.message, /the simulated runtime did not list its nodes within 0.05 s/);
      return true;
    });
  });
});
