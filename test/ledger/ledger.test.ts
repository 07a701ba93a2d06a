import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, type TestContext, test } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import type { Ledger, LedgerEvent, LedgerOptions, LiveEvent, NewEvent } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { rawLedgerKeys } from "../support/raw-ledger.ts";

// Folders go once every test is over, so no folder is removed under a ledger still closing.
const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "swarmd-ledger-"));
  dirs.push(dir);
  return dir;
}

async function open(t: TestContext, dir?: string, options?: LedgerOptions): Promise<{ ledger: Ledger; dir: string }> {
  const path = dir ?? (await tempDir());
  const ledger = await openLedger(path, options);
  t.after(() => ledger.close());
  return { ledger, dir: path };
}

const ev = (type: string, data: Record<string, unknown> = {}, agentId: string | null = null): NewEvent => ({
  type,
  agentId,
  data,
});
const seqs = (events: Array<{ seq: number }>) => events.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function collect(iterable: AsyncIterable<LedgerEvent>): Promise<LedgerEvent[]> {
  const out: LedgerEvent[] = [];
  for await (const e of iterable) out.push(e);
  return out;
}

test("seq is gap-free from 1 per run and independent across runs", async (t) => {
  const { ledger } = await open(t);
  const a1 = await ledger.append("run-a", [ev("run_started", { runId: "run-a" }), ev("agent_spawned", {}, "ag-1")]);
  const b1 = await ledger.append("run-b", [ev("run_started")]);
  const a2 = await ledger.append("run-a", [ev("turn_start", {}, "ag-1")]);
  assert.deepEqual(seqs(a1), [1, 2]);
  assert.deepEqual(seqs(b1), [1]);
  assert.deepEqual(seqs(a2), [3]);
  assert.equal(ledger.lastSeq("run-a"), 3);
  assert.equal(ledger.lastSeq("run-b"), 1);
  assert.equal(ledger.lastSeq("nope"), 0);
  assert.deepEqual(ledger.runIds().sort(), ["run-a", "run-b"]);
  const stored = await ledger.read("run-a", 0);
  assert.deepEqual(
    stored.map((e) => [e.seq, e.type, e.agentId, e.runId]),
    [
      [1, "run_started", null, "run-a"],
      [2, "agent_spawned", "ag-1", "run-a"],
      [3, "turn_start", "ag-1", "run-a"],
    ],
  );
  assert.deepEqual(stored[0]?.data, { runId: "run-a" });
  assert.deepEqual(stored, [...a1, ...a2]);
});

test("1,000 concurrent appends are group-committed in call order", async (t) => {
  const { ledger } = await open(t);
  const calls = range(0, 999).map((i) => ledger.append("r", [ev("tick", { i })]));
  const results = await Promise.all(calls);
  assert.deepEqual(
    results.map((r) => [r[0]?.seq, r[0]?.data.i]),
    range(0, 999).map((i) => [i + 1, i]),
  );
  const { appends, batches, events } = ledger.stats();
  assert.equal(appends, 1000);
  assert.equal(events, 1000);
  assert.ok(batches < 10, `expected a few batches, got ${batches}`);
});

test("many async callers interleave without gaps and each caller's order is kept", async (t) => {
  const { ledger } = await open(t);
  const seen = new Map<number, number[]>();
  const caller = async (c: number) => {
    for (let k = 0; k < 20; k++) {
      const [stored] = await ledger.append("r", [ev("tick", { c, k })]);
      seen.set(c, [...(seen.get(c) ?? []), stored?.seq ?? -1]);
    }
  };
  await Promise.all(range(0, 49).map(caller));
  const all = await ledger.read("r", 0, 5000);
  assert.deepEqual(seqs(all), range(1, 1000));
  for (const [c, list] of seen)
    assert.deepEqual(
      list,
      [...list].sort((x, y) => x - y),
      `caller ${c} out of order`,
    );
  for (let c = 0; c < 50; c++) {
    assert.deepEqual(
      all.filter((e) => e.data.c === c).map((e) => e.data.k),
      range(0, 19),
    );
  }
  assert.ok(ledger.stats().batches < 1000, `batches ${ledger.stats().batches} should be fewer than 1000 appends`);
});

test("reopening keeps each run's seq and never reuses one", async (t) => {
  const dir = await tempDir();
  const first = await openLedger(dir);
  await first.append("a", [ev("x", { n: 1 }), ev("x", { n: 2 }), ev("x", { n: 3 })]);
  await first.append("b", [ev("y"), ev("y")]);
  // LevelDB's lock keeps a second writer out: two writers would hand out the same seqs.
  await assert.rejects(openLedger(dir), (err: unknown) => isSwarmError(err, "INTERNAL"));
  await first.close();

  const { ledger } = await open(t, dir);
  assert.equal(ledger.lastSeq("a"), 3);
  assert.equal(ledger.lastSeq("b"), 2);
  assert.deepEqual(ledger.runIds().sort(), ["a", "b"]);
  const [next] = await ledger.append("a", [ev("x", { n: 4 })]);
  assert.equal(next?.seq, 4);
  const all = await ledger.read("a", 0);
  assert.deepEqual(
    all.map((e) => [e.seq, e.data.n]),
    [
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
    ],
  );
});

test("read and iterate page through 100,000 events in order", async (t) => {
  const { ledger } = await open(t);
  const total = 100_000;
  const chunk = 10_000;
  for (let base = 0; base < total; base += chunk) {
    await ledger.append(
      "big",
      range(base, base + chunk - 1).map((i) => ev("tool_end", { i })),
    );
  }
  await ledger.append("other", [ev("noise")]);
  assert.equal(ledger.lastSeq("big"), total);

  let cursor = 0;
  let count = 0;
  for (;;) {
    const page = await ledger.read("big", cursor, 7_000);
    if (page.length === 0) break;
    for (const e of page) {
      count += 1;
      assert.equal(e.seq, count);
      assert.equal(e.data.i, count - 1);
    }
    cursor = page.at(-1)?.seq ?? cursor;
  }
  assert.equal(count, total);

  let expected = 1;
  for await (const e of ledger.iterate("big", 0)) {
    assert.equal(e.seq, expected);
    assert.equal(e.runId, "big");
    expected += 1;
  }
  assert.equal(expected, total + 1);
  assert.deepEqual(seqs(await ledger.read("big", total - 3)), [total - 2, total - 1, total]);
  assert.deepEqual(seqs(await ledger.read("big", 10, 2)), [11, 12]);
  assert.deepEqual(await ledger.read("big", total), []);
  assert.deepEqual(await collect(ledger.iterate("unknown", 0)), []);
  // Smaller pages (the event stream's replay): across a short last page, and ending on a full one.
  assert.deepEqual(seqs(await collect(ledger.iterate("big", total - 130, 64))), range(total - 129, total));
  assert.deepEqual(seqs(await collect(ledger.iterate("big", total - 128, 64))), range(total - 127, total));
});

test("readStored gives the text read parses, in pages cut by maxBytes but never empty", async (t) => {
  const { ledger } = await open(t);
  const big = "y".repeat(10_000);
  await ledger.append("r", [ev("small", { n: 1 }), ev("big", { big }, "a_1"), ev("small", { n: 3 }), ev("small")]);
  await ledger.append("other", [ev("noise")]);
  const all = await ledger.read("r", 0);
  assert.deepEqual(
    (await ledger.readStored("r", 0)).map((json) => JSON.parse(json)),
    all,
  );
  // A page holds events until it has more than maxBytes: the big one ends the first page.
  const first = await ledger.readStored("r", 0, 1000, 100);
  assert.deepEqual(
    first.map((json) => (JSON.parse(json) as LedgerEvent).seq),
    [1, 2],
  );
  // A page is never empty while events remain, whatever maxBytes says.
  assert.deepEqual(
    (await ledger.readStored("r", 1, 1000, 0)).map((json) => (JSON.parse(json) as LedgerEvent).seq),
    [2],
  );
  assert.deepEqual(
    (await ledger.readStored("r", 2, 1000, 100_000)).map((json) => (JSON.parse(json) as LedgerEvent).seq),
    [3, 4],
  );
  assert.deepEqual(
    (await ledger.readStored("r", 0, 2, 100_000)).map((json) => (JSON.parse(json) as LedgerEvent).seq),
    [1, 2],
  );
  assert.deepEqual(await ledger.readStored("r", 4, 1000, 100), []);
  assert.deepEqual(await ledger.readStored("unknown", 0, 1000, 100), []);
});

test("index puts and deletes commit in the same batch as their events", async (t) => {
  const dir = await tempDir();
  const ledger = await openLedger(dir);
  const seenAtNotify: Array<Promise<string | undefined>> = [];
  ledger.subscribe("r", (e) => {
    // The listener runs right after the commit: the index must already be readable.
    if (e.persisted) seenAtNotify.push(ledger.getIndex(`agent!${e.agentId}`));
  });
  await ledger.append("r", [ev("agent_spawned", {}, "ag-1")], {
    put: [
      { key: "agent!ag-1", value: "r" },
      { key: "idem!r!k1", value: "ag-1" },
    ],
  });
  await ledger.append("r", [ev("agent_spawned", {}, "ag-2")], {
    put: [{ key: "agent!ag-2", value: "r" }],
    del: ["idem!r!k1"],
  });
  assert.deepEqual(await Promise.all(seenAtNotify), ["r", "r"]);
  assert.equal(await ledger.getIndex("idem!r!k1"), undefined);
  await ledger.close();

  const { ledger: reopened } = await open(t, dir);
  assert.deepEqual(await reopened.listIndex("agent!"), [
    { key: "agent!ag-1", value: "r" },
    { key: "agent!ag-2", value: "r" },
  ]);
  assert.deepEqual(await reopened.listIndex("nothing!"), []);
  assert.equal(reopened.lastSeq("r"), 2);
});

test("a malformed append fails alone and consumes no seq", async (t) => {
  const { ledger } = await open(t);
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const good1 = ledger.append("r", [ev("a")]);
  const bad = ledger.append("r", [ev("b", circular)], { put: [{ key: "k", value: "v" }] });
  const good2 = ledger.append("r", [ev("c")]);
  await assert.rejects(bad, (err: unknown) => isSwarmError(err, "INTERNAL"));
  assert.deepEqual(seqs(await good1), [1]);
  assert.deepEqual(seqs(await good2), [2]);
  assert.equal(await ledger.getIndex("k"), undefined);
  await assert.rejects(ledger.append("a!b", [ev("x")]), (err: unknown) => isSwarmError(err, "INTERNAL"));
  assert.deepEqual(ledger.runIds(), ["r"]);
});

test("subscribers get persisted events after commit in order, and ephemeral events that are never stored", async (t) => {
  const dir = await tempDir();
  const ledger = await openLedger(dir);
  const got: LiveEvent[] = [];
  const other: LiveEvent[] = [];
  const unsubscribe = ledger.subscribe("r", (e) => {
    if (e.persisted) assert.ok(ledger.lastSeq("r") >= e.seq, "lastSeq is raised before notification");
    got.push(e);
  });
  ledger.subscribe("s", (e) => other.push(e));
  await ledger.append("r", [ev("turn_start", {}, "ag"), ev("turn_end", {}, "ag")]);
  ledger.publish("r", { type: "text", agentId: "ag", data: { delta: "hi" } });
  await ledger.append("r", [ev("agent_end", {}, "ag")]);
  assert.deepEqual(
    got.map((e) => (e.persisted ? [e.type, e.seq] : [e.type, "ephemeral"])),
    [
      ["turn_start", 1],
      ["turn_end", 2],
      ["text", "ephemeral"],
      ["agent_end", 3],
    ],
  );
  assert.deepEqual(got[2], { persisted: false, runId: "r", type: "text", agentId: "ag", data: { delta: "hi" } });
  assert.deepEqual(other, []);
  assert.deepEqual(
    (await ledger.read("r", 0)).map((e) => e.type),
    ["turn_start", "turn_end", "agent_end"],
  );

  unsubscribe();
  unsubscribe();
  await ledger.append("r", [ev("late")]);
  ledger.publish("r", { type: "text", agentId: "ag", data: {} });
  assert.equal(got.length, 4);
  await ledger.close();

  const { ledger: reopened } = await open(t, dir);
  assert.equal(reopened.lastSeq("r"), 4);
  assert.deepEqual(
    (await reopened.read("r", 0)).map((e) => e.type),
    ["turn_start", "turn_end", "agent_end", "late"],
  );
});

test("replay-then-live loses nothing and duplicates nothing while appends run", async (t) => {
  const { ledger } = await open(t);
  const total = 3_000;
  /** A consumer following the documented recipe, started once `startAt` events exist. */
  const consume = async (startAt: number, done: Promise<void>): Promise<number[]> => {
    while (ledger.lastSeq("r") < startAt) await new Promise((r) => setImmediate(r));
    const received: number[] = [];
    const buffered: LedgerEvent[] = [];
    let live = false;
    ledger.subscribe("r", (e) => {
      if (!e.persisted) return;
      if (live) {
        if (e.seq > (received.at(-1) ?? 0)) received.push(e.seq);
      } else buffered.push(e);
    });
    for await (const e of ledger.iterate("r", 0)) received.push(e.seq);
    for (const e of buffered) if (e.seq > (received.at(-1) ?? 0)) received.push(e.seq);
    live = true;
    await done;
    return received;
  };
  let finish = () => {};
  const done = new Promise<void>((r) => (finish = r));
  const consumers = [0, 1, 500, 1_500, 2_900].map((at) => consume(at, done));
  let written = 0;
  const writers = range(0, 9).map(async (w) => {
    while (written < total) {
      const n = Math.min(1 + ((written * 7 + w) % 13), total - written);
      written += n;
      await ledger.append(
        "r",
        range(1, n).map((k) => ev("tool_end", { w, k })),
      );
    }
  });
  await Promise.all(writers);
  finish();
  for (const received of await Promise.all(consumers)) assert.deepEqual(received, range(1, total));
});

test("a throwing listener does not break appends or other listeners", async (t) => {
  const errors: unknown[] = [];
  const { ledger } = await open(t, undefined, { onListenerError: (err) => errors.push(err) });
  const seen: number[] = [];
  ledger.subscribe("r", () => {
    throw new Error("listener bug");
  });
  ledger.subscribe("r", (e) => {
    if (e.persisted) seen.push(e.seq);
  });
  assert.deepEqual(seqs(await ledger.append("r", [ev("a"), ev("b")])), [1, 2]);
  ledger.publish("r", { type: "text", agentId: null, data: {} });
  assert.deepEqual(seqs(await ledger.append("r", [ev("c")])), [3]);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(errors.length, 4);
});

test("close waits for queued appends; append after close rejects with LEDGER_CLOSED", async (t) => {
  const dir = await tempDir();
  const ledger = await openLedger(dir);
  const inFlight = ledger.append("r", [ev("a")]);
  const queued = ledger.append("r", [ev("b")]);
  const closing = ledger.close();
  await assert.rejects(ledger.append("r", [ev("c")]), (err: unknown) => isSwarmError(err, "LEDGER_CLOSED"));
  assert.deepEqual(seqs([...(await inFlight), ...(await queued)]), [1, 2]);
  await closing;
  await ledger.close();
  await assert.rejects(ledger.append("r", [ev("d")]), (err: unknown) => isSwarmError(err, "LEDGER_CLOSED"));
  await assert.rejects(ledger.read("r", 0), (err: unknown) => isSwarmError(err, "LEDGER_CLOSED"));
  ledger.publish("r", { type: "text", agentId: null, data: {} });

  const { ledger: reopened } = await open(t, dir);
  assert.deepEqual(
    (await reopened.read("r", 0)).map((e) => e.type),
    ["a", "b"],
  );
});

test("dropRun takes a run off the list at once and for good; its appends are refused, other runs go on", async (t) => {
  const { ledger, dir } = await open(t);
  await ledger.append("r_a", [ev("run_started"), ev("turn_start", {}, "a_1")], {
    put: [{ key: "agent!a_1", value: "{}" }],
  });
  await ledger.append("r_b", [ev("run_started")]);
  const late = ledger.append("r_a", [ev("turn_end", {}, "a_1")]); // queued before the drop: committed, then erased with the rest
  await ledger.dropRun("r_a", { key: "purge!r_a", value: "marker" });
  await late;
  assert.deepEqual(ledger.runIds(), ["r_b"]);
  assert.equal(ledger.lastSeq("r_a"), 0);
  assert.deepEqual(await ledger.read("r_a", 0), []);
  await assert.rejects(ledger.append("r_a", [ev("turn_start", {}, "a_1")]), (err: unknown) =>
    isSwarmError(err, "RUN_NOT_FOUND"),
  );
  await assert.rejects(ledger.append("r_a", [], { put: [{ key: "hseq!a_1", value: "9" }] }), (err: unknown) =>
    isSwarmError(err, "RUN_NOT_FOUND"),
  );
  assert.deepEqual(seqs(await ledger.append("r_b", [ev("turn_start")])), [2]);
  assert.equal(await ledger.getIndex("purge!r_a"), "marker");

  await ledger.close();
  const reopened = await openLedger(dir);
  t.after(() => reopened.close());
  assert.deepEqual(reopened.runIds(), ["r_b"], "a restart does not bring the run back");
  assert.equal(
    await reopened.getIndex("purge!r_a"),
    "marker",
    "the marker outlives the restart, for the sweep to finish",
  );
});

test("eraseRun deletes a dropped run's events and index keys, the named ones last, and nothing of another run", async (t) => {
  const { ledger, dir } = await open(t);
  // More events than one erase page; `r_a1` starts with `r_a` and must be left alone.
  for (let i = 0; i < 3; i++)
    await ledger.append(
      "r_a",
      range(1, 1000).map((n) => ev("tick", { n })),
    );
  await ledger.append("r_a", [], {
    put: [
      { key: "agent!a_1", value: "{}" },
      { key: "idem!r_a!k1", value: "x" },
      { key: "idem!r_a!k2", value: "y" },
    ],
  });
  await ledger.append("r_a1", [ev("run_started")], {
    put: [
      { key: "agent!a_9", value: "{}" },
      { key: "idem!r_a1!k1", value: "z" },
    ],
  });
  await ledger.dropRun("r_a", { key: "purge!r_a", value: "marker" });
  const index = { prefixes: ["idem!r_a!"], keys: ["agent!a_1", "hseq!a_1", "purge!r_a"] };
  await ledger.eraseRun("r_a", index);
  await ledger.eraseRun("r_a", index); // idempotent: a sweep redone after a crash
  assert.deepEqual(
    (await ledger.listIndex("")).map((e) => e.key),
    ["agent!a_9", "idem!r_a1!k1"],
  );
  assert.deepEqual(seqs(await ledger.read("r_a1", 0)), [1]);
  await ledger.close();
  assert.deepEqual((await rawLedgerKeys(dir)).sort(), [
    "!ev!r_a1!000000000001",
    "!ix!agent!a_9",
    "!ix!idem!r_a1!k1",
    "!meta!run!r_a1",
  ]);
});
