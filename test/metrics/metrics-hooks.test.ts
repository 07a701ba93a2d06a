import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import type { CommittedBatch } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { observeRuntime } from "../../src/metrics/observed-runtime.ts";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";

test("the ledger tells its commit observer of each batch: appends merged, each one's latency, the events", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-commit-observer-"));
  const batches: CommittedBatch[] = [];
  const ledger = await openLedger(dir, { onCommit: (batch) => batches.push(batch) });
  t.after(async () => {
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Three appends in one tick: group commit merges those that queue behind a batch in flight.
  await Promise.all([
    ledger.append("r_1", [{ type: "a", agentId: null, data: {} }]),
    ledger.append("r_1", [{ type: "b", agentId: null, data: {} }]),
    ledger.append("r_2", [
      { type: "c", agentId: null, data: {} },
      { type: "d", agentId: null, data: {} },
    ]),
  ]);
  assert.equal(batches.length, ledger.stats().batches);
  assert.equal(
    batches.reduce((n, b) => n + b.appends, 0),
    3,
  );
  for (const b of batches) assert.equal(b.appendSeconds.length, b.appends);
  assert.deepEqual(
    batches.flatMap((b) => b.events.map((e) => `${e.runId}:${e.seq}:${e.type}`)),
    ["r_1:1:a", "r_1:2:b", "r_2:1:c", "r_2:2:d"],
  );
  for (const seconds of batches.flatMap((b) => b.appendSeconds))
    assert.ok(seconds >= 0 && seconds < 10, String(seconds));
});

test("an observer that throws fails no append", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-commit-observer-"));
  const ledger = await openLedger(dir, {
    onCommit: () => {
      throw new Error("metrics broke");
    },
  });
  t.after(async () => {
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const [stored] = await ledger.append("r_1", [{ type: "a", agentId: null, data: {} }]);
  assert.equal(stored?.seq, 1);
  assert.equal((await ledger.read("r_1", 0)).length, 1);
});

test("the observed runtime times every call, failed ones too, and passes results and errors through", async () => {
  const calls: Array<[string, string]> = [];
  const runtime = observeRuntime(createMemoryRuntime(), (kind, operation, seconds) => {
    assert.ok(seconds >= 0);
    calls.push([kind, operation]);
  });
  const signal = AbortSignal.timeout(5_000);
  assert.equal(runtime.kind, "simulated");
  const info = await runtime.provision(
    {
      sandboxId: "00000000-0000-4000-8000-00000000000a",
      runId: "r_1",
      agentId: "a_1",
      spec: { name: "x", script: [] },
    },
    signal,
  );
  assert.equal(info.status, "running");
  await assert.rejects(runtime.freeze("00000000-0000-4000-8000-0000000000ff", signal), (err: unknown) =>
    isSwarmError(err, "SANDBOX_NOT_FOUND"),
  );
  await runtime.close(info.sandboxId, signal);
  assert.deepEqual(calls, [
    ["simulated", "provision"],
    ["simulated", "freeze"],
    ["simulated", "close"],
  ]);
});
