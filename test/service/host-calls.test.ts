/**
 * The parts behind an agent's host calls, alone: the queue of one agent's calls (8 answered, 64
 * waiting in order, a weight bound, held by a pause, dropped with its connection) and the run's
 * record of refused calls (rate-limited, the count exact). End to end over HTTP:
 * test/e2e/tool-errors.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createHostCallQueue,
  HOST_CALLS_ANSWERED,
  HOST_CALLS_WAITING,
  HOST_CALLS_WAITING_BYTES,
} from "../../actors/effects/host-call-queue.ts";
import { REFUSAL_WRITES, ToolRefusals } from "../../actors/run/tool-refusals.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** A queue whose calls are answered when the test says so; `started` lists them in the order they began. */
function queueUnderTest() {
  const queue = createHostCallQueue();
  const started: number[] = [];
  const finish = new Map<number, () => void>();
  const offer = (n: number, bytes = 100) =>
    queue.offer(bytes, () => {
      started.push(n);
      return new Promise<void>((resolve) => finish.set(n, resolve));
    });
  const answer = async (n: number) => {
    finish.get(n)!();
    finish.delete(n);
    await flush();
  };
  /** Answer every call started, and those that start meanwhile, oldest first. */
  const answerAll = async () => {
    for (let next = finish.keys().next(); !next.done; next = finish.keys().next()) await answer(next.value);
  };
  return { queue, started, offer, answer, answerAll };
}

describe("an agent's host call queue", () => {
  it("answers 8 at once, keeps 64 waiting and refuses the rest; waiting calls start in the order they came", async () => {
    const q = queueUnderTest();
    const taken = Array.from({ length: 80 }, (_, n) => q.offer(n));
    assert.equal(HOST_CALLS_ANSWERED + HOST_CALLS_WAITING, 72);
    assert.deepEqual(
      taken.map((ok, n) => (ok ? -1 : n)).filter((n) => n >= 0),
      [72, 73, 74, 75, 76, 77, 78, 79],
      "the calls past 8 + 64 are refused",
    );
    assert.deepEqual(q.started, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(q.queue.counts, { answering: 8, waiting: 64 });
    await q.answer(3);
    await q.answer(0);
    assert.deepEqual(q.started.slice(8), [8, 9], "FIFO, whichever answered");
    assert.deepEqual([q.offer(80), q.offer(81), q.offer(82)], [true, true, false], "the places freed are taken again");
    await q.answerAll();
    assert.deepEqual(
      q.started,
      Array.from({ length: 82 }, (_, n) => n).filter((n) => n < 72 || n >= 80),
    );
    assert.deepEqual(q.queue.counts, { answering: 0, waiting: 0 });
  });

  it("held, starts nothing more until released; calls being answered go on", async () => {
    const q = queueUnderTest();
    for (let n = 0; n < 10; n++) q.offer(n);
    q.queue.hold();
    q.queue.hold();
    await q.answer(0);
    await q.answer(1);
    assert.deepEqual(q.started, [0, 1, 2, 3, 4, 5, 6, 7], "answered while held, but nothing new starts");
    assert.equal(q.offer(10), true, "a held queue still takes calls up to its size");
    q.queue.release();
    await flush();
    assert.deepEqual(q.started.slice(8), [8, 9], "into the two slots freed");
    q.queue.release();
    await q.answer(2);
    assert.deepEqual(q.started.slice(10), [10]);
    // Held with free slots: a new call waits too.
    q.queue.hold();
    await q.answerAll();
    assert.equal(q.offer(11), true);
    await flush();
    assert.equal(q.started.length, 11);
    q.queue.release();
    await flush();
    assert.deepEqual(q.started.slice(11), [11]);
  });

  it("drops every waiting call (never started) and forgets their weight; calls being answered go on", async () => {
    const q = queueUnderTest();
    for (let n = 0; n < 72; n++) assert.equal(q.offer(n, 200_000), true);
    q.queue.drop();
    assert.deepEqual(q.queue.counts, { answering: 8, waiting: 0 });
    for (let n = 0; n < 8; n++) await q.answer(n);
    assert.deepEqual(q.started, [0, 1, 2, 3, 4, 5, 6, 7], "the dropped calls never start");
    assert.equal(q.offer(100, 200_000), true);
    assert.deepEqual(q.started.at(-1), 100);
  });

  it("bounds the weight of the waiting calls, not of those answered at once", async () => {
    const q = queueUnderTest();
    const big = 4 * 1024 * 1024; // the longest line a harness may send
    for (let n = 0; n < 8; n++) assert.equal(q.offer(n, big), true, "answered at once, whatever they weigh");
    const waiting = HOST_CALLS_WAITING_BYTES / big;
    for (let n = 8; n < 8 + waiting; n++) assert.equal(q.offer(n, big), true);
    assert.equal(q.offer(99, big), false, "past the weight bound");
    assert.equal(q.offer(98, 1), false, "however small: the bound is full");
    await q.answer(0);
    assert.deepEqual(q.queue.counts, { answering: 8, waiting: waiting - 1 });
    assert.equal(q.offer(97, big), true, "a started call's weight is no longer counted");
  });
});

describe("the run's record of refused tool calls", () => {
  /** A recorder whose timers the test fires, and the events it appended. */
  function recorder(append?: (events: RunEventInput[]) => Promise<unknown>) {
    const written: RunEventInput[] = [];
    const timers: Array<{ fire: () => void; delayMs: number }> = [];
    const logs: string[] = [];
    const refusals = new ToolRefusals({
      append:
        append ??
        (async (events) => {
          written.push(...events);
        }),
      timer: (fire, delayMs) => timers.push({ fire, delayMs }),
      log: (message) => logs.push(message),
    });
    return { refusals, written, timers, logs };
  }
  const full = (n: number) => ({ tool: "await_result", code: "HOST_CALLS_FULL", message: `full ${n}` });

  it("writes a burst one event each, then what comes faster as one event with its count, so the sum is exact", async () => {
    const r = recorder();
    const total = REFUSAL_WRITES.burst + 500;
    for (let n = 0; n < total; n++) r.refusals.record("a_1", full(n));
    r.refusals.record("a_2", full(-1));
    await flush();
    assert.equal(r.written.length, REFUSAL_WRITES.burst + 1, "the burst, and the other agent's own");
    assert.equal(r.timers.length, 1, "one timer for what is held");
    assert.ok(r.timers[0]!.delayMs > 0 && r.timers[0]!.delayMs <= 1000 / REFUSAL_WRITES.perSecond + 1);
    r.timers[0]!.fire();
    await flush();
    const held = r.written.at(-1)!;
    assert.deepEqual(held, {
      type: "tool_refused",
      agentId: "a_1",
      data: { tool: "await_result", code: "HOST_CALLS_FULL", message: `full ${total - 1}`, count: 500 },
    });
    const counted = r.written
      .filter((e) => e.agentId === "a_1")
      .reduce((sum, e) => sum + (e.type === "tool_refused" ? e.data.count : 0), 0);
    assert.equal(counted, total);
  });

  it("cuts long words, writes what it holds when the run closes, and logs a write that failed", async () => {
    const r = recorder();
    r.refusals.record("a_1", { tool: "t".repeat(100), code: "INVALID_BODY", message: "m".repeat(5_000) });
    // The first took a place of the burst: two past it are held.
    for (let n = 0; n < REFUSAL_WRITES.burst + 1; n++) r.refusals.record("a_1", full(n));
    r.refusals.close();
    await flush();
    const first = r.written[0]!;
    assert.ok(first.type === "tool_refused");
    assert.equal(first.data.tool, `${"t".repeat(64)}… (cut)`);
    assert.equal(first.data.message.length, 2_000 + "… (cut)".length);
    const last = r.written.at(-1);
    assert.deepEqual(last?.type === "tool_refused" && last.data.count, 2, "the two held, written at close");

    const failing = recorder(async () => {
      throw new Error("disk full");
    });
    failing.refusals.record("a_9", full(1));
    await flush();
    assert.match(failing.logs[0]!, /could not record 1 refused await_result call\(s\) of a_9: disk full/);
  });
});
