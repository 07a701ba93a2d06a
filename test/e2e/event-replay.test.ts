import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import type { NewEvent } from "../../src/ledger/ledger.ts";
import { IdReader } from "../hardening/sse-id-reader.ts";
import { type Daemon, startDaemon } from "../support/daemon.ts";

/** The persisted frames of one connection exactly as they came over the wire, and the last id. */
function rawFrames(base: string, runId: string, lastEventId: number) {
  const frames: string[] = [];
  let lastId = lastEventId;
  let tail = "";
  let ended = false;
  const wakers = new Set<() => void>();
  const req = request(`${base}/runs/${runId}/events`, {
    headers: { accept: "text/event-stream", "last-event-id": String(lastEventId) },
  });
  const opened = new Promise<number>((resolve, reject) => {
    req.on("error", reject);
    req.on("response", (res) => {
      resolve(res.statusCode ?? 0);
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const blocks = (tail + chunk).split("\n\n");
        tail = blocks.pop() ?? "";
        for (const block of blocks) {
          // Heartbeats and ephemeral events are no part of what a replay gives back.
          if (!block.startsWith("id: ")) continue;
          frames.push(`${block}\n\n`);
          lastId = Number(block.slice(4, block.indexOf("\n")));
        }
        for (const wake of wakers) wake();
      });
      res.on("close", () => {
        ended = true;
        for (const wake of wakers) wake();
      });
    });
  });
  req.end();
  return {
    frames,
    opened,
    /** Resolves once `seq` came; rejects if the stream ends before. */
    until: (seq: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (lastId < seq && !ended) return;
          wakers.delete(check);
          if (lastId >= seq) resolve();
          else reject(new Error(`the stream ended at id ${lastId}, before ${seq}`));
        };
        wakers.add(check);
        check();
      }),
    close: () => req.destroy(),
  };
}

async function createRun(d: Daemon): Promise<{ runId: string; rootAgentId: string }> {
  const created = await d.call<{ runId: string; rootAgentId: string }>("POST", "/runs", {
    spec: { name: "replay", script: [] },
    keepAlive: true,
  });
  assert.equal(created.status, 202);
  return created.body;
}

test("a client replaying from Last-Event-ID gets byte for byte the frames live clients got", {
  timeout: 60_000,
}, async (t) => {
  const d = await startDaemon();
  t.after(() => d.stop());
  const { runId, rootAgentId } = await createRun(d);
  const from = d.ledger.lastSeq(runId);
  const live = rawFrames(d.url, runId, from);
  t.after(() => live.close());
  assert.equal(await live.opened, 200);

  const odd: NewEvent[] = [
    { type: "tool_end", agentId: rootAgentId, data: { output: 'é 😀 "q" \\ \n \u2028', isError: false } },
    { type: "probe", agentId: rootAgentId, data: { requestId: "p_1", at: 2, seq: "own", agentId: "other" } },
    { type: "probe", agentId: null, data: {} },
    { type: "odd\r\nname", agentId: rootAgentId, data: { nested: { seq: 1 }, 2: "two", 1: "one" } },
    { type: "tool_end", agentId: rootAgentId, data: { output: "z".repeat(300_000) } },
  ];
  await d.ledger.append(runId, odd);
  // Many pages of the replay; on the live path one commit far past the slow-consumer limit (500)
  // and a socket's buffer (a subtree stop of a big run writes such), batches bigger than the
  // buffer, then single appends group-committed. The live client reads: it is never cut.
  const huge = Array.from({ length: 2_000 }, (_, i) => ({
    type: "agent_state_changed",
    agentId: rootAgentId,
    data: { n: i, from: "running", to: "paused" },
  }));
  await d.ledger.append(runId, huge);
  await live.until(d.ledger.lastSeq(runId));
  const many = Array.from({ length: 1_900 }, (_, i) => ({
    type: "tool_end",
    agentId: rootAgentId,
    data: { hseq: i, output: `line ${i} ${"x".repeat(i % 700)}` },
  }));
  for (let i = 0; i < 1_500; i += 300) {
    await d.ledger.append(runId, many.slice(i, i + 300));
    await live.until(d.ledger.lastSeq(runId));
  }
  await Promise.all(many.slice(1_500).map((e) => d.ledger.append(runId, [e])));
  const last = d.ledger.lastSeq(runId);
  await live.until(last);

  const replay = rawFrames(d.url, runId, from);
  t.after(() => replay.close());
  await replay.until(last);
  // The run's own events (its root starting) may come in between; both saw the same ones.
  const upTo = (frames: string[]) => frames.filter((f) => Number(f.slice(4, f.indexOf("\n"))) <= last);
  assert.equal(upTo(live.frames).length, last - from);
  assert.deepEqual(upTo(replay.frames), upTo(live.frames));
  // Among them the odd ones: an own `at` overwritten where it stands, a name stripped of CR and LF.
  assert.ok(replay.frames.some((f) => f.includes('data: {"requestId":"p_1","at":')));
  assert.ok(replay.frames.some((f) => f.includes("\nevent: oddname\n")));
});

test("a client that stops reading is cut off while the others, reading, get every event and the appends all commit", {
  timeout: 120_000,
}, async (t) => {
  const d = await startDaemon({ slowConsumerLimit: 50 });
  t.after(() => d.stop());
  const { runId, rootAgentId } = await createRun(d);
  const from = d.ledger.lastSeq(runId);
  const readers = [new IdReader(d.url, runId, from), new IdReader(d.url, runId, from)];
  const stalled = new IdReader(d.url, runId, from);
  t.after(() => {
    for (const r of [...readers, stalled]) r.destroy();
  });
  await d.ledger.append(runId, [{ type: "probe", agentId: null, data: {} }]);
  await Promise.all([...readers, stalled].map((r) => r.waitForId(from + 1)));
  stalled.pause();
  const payload = "p".repeat(8 * 1024);
  for (let batch = 0; batch < 40; batch++) {
    await d.ledger.append(
      runId,
      Array.from({ length: 25 }, (_, i) => ({ type: "tool_end", agentId: rootAgentId, data: { i, payload } })),
    );
  }
  const last = d.ledger.lastSeq(runId);
  await Promise.all(readers.map((r) => r.waitForId(last)));
  for (const r of readers) {
    const mine = r.ids.filter((id) => id > from);
    assert.deepEqual(
      mine,
      Array.from({ length: last - from }, (_, i) => from + 1 + i),
      "a reader misses nothing",
    );
  }
  // The stalled one was let go: what it reads once it wakes up ends before the last event.
  stalled.resume();
  await stalled.untilEnded();
  assert.ok((stalled.lastId ?? 0) < last, `the stalled client was cut before the end (at ${stalled.lastId})`);
  const got = stalled.ids.filter((id) => id > from);
  assert.deepEqual(
    got,
    Array.from({ length: got.length }, (_, i) => from + 1 + i),
    "what it got is gap-free",
  );
});
