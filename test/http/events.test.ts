import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { setImmediate as tick } from "node:timers/promises";
import type { ServerConfig } from "../../src/http/build-server.ts";
import { ROOT_ID, RUN_ID, setup } from "./fakes.ts";
import { SseClient } from "./sse-client.ts";

/** A listening server on loopback port 0: SSE needs a real socket to show backpressure. */
async function listen(t: TestContext, config: Partial<ServerConfig> = {}, options: { snapshot?: boolean } = {}) {
  const ctx = setup(config, options);
  t.after(() => ctx.app.close());
  const address = await ctx.app.listen({ host: "127.0.0.1", port: 0 });
  const open = (path: string, headers: Record<string, string | null> = {}) => {
    const client = new SseClient(`${address}${path}`, headers);
    t.after(() => client.close());
    return client;
  };
  return { ...ctx, address, open };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test("the stream of an unknown run is a 404 with an error body", async (t) => {
  const { open } = await listen(t);
  const client = open("/runs/r_99/events");
  const res = await client.response;
  assert.equal(res.statusCode, 404);
  await client.ended;
  assert.deepEqual(client.frames, []);
});

test("a non-integer Last-Event-ID or lastEventId is a 400", async (t) => {
  const { app, events } = await listen(t);
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  for (const [url, headers, message] of [
    ["/runs/r_1/events", { "last-event-id": "abc" }, "header.Last-Event-ID: must be a non-negative integer event id"],
    ["/runs/r_1/events?lastEventId=-1", {}, "query.lastEventId: must be a non-negative integer event id"],
    ["/runs/r_1/events?lastEventId=1.5", {}, "query.lastEventId: must be a non-negative integer event id"],
  ] as const) {
    const res = await app.inject({ method: "GET", url, headers });
    assert.equal(res.statusCode, 400, url);
    assert.deepEqual(res.json(), { error: message });
  }
});

test("replays after Last-Event-ID with ids only on persisted events and agentId in every data", async (t) => {
  const { events, open } = await listen(t);
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  events.append(RUN_ID, "agent_spawned", ROOT_ID, { specName: "echo" });
  events.append(RUN_ID, "turn_start", ROOT_ID);
  const client = open("/runs/r_1/events", { "last-event-id": "1" });
  const res = await client.response;
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers["content-type"], "text/event-stream; charset=utf-8");
  assert.equal(res.headers["cache-control"], "no-cache, no-transform");
  await client.until((f) => f.id === 3);
  events.ephemeral(RUN_ID, "text", ROOT_ID, { delta: "he" });
  events.append(RUN_ID, "turn_end", ROOT_ID, { stopReason: "stop" });
  await client.until((f) => f.id === 4);
  assert.deepEqual(client.frames, [
    { id: 2, event: "agent_spawned", data: { specName: "echo", agentId: ROOT_ID, seq: 2, at: 1_700_000_000_001 } },
    { id: 3, event: "turn_start", data: { agentId: ROOT_ID, seq: 3, at: 1_700_000_000_002 } },
    { event: "text", data: { delta: "he", agentId: ROOT_ID } },
    { id: 4, event: "turn_end", data: { stopReason: "stop", agentId: ROOT_ID, seq: 4, at: 1_700_000_000_003 } },
  ]);
});

test("replays from ?lastEventId= and from the start without either; the header wins over the query", async (t) => {
  const { events, open } = await listen(t);
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  for (let i = 0; i < 4; i++) events.append(RUN_ID, "turn_start", ROOT_ID);
  const fromQuery = open("/runs/r_1/events?lastEventId=3");
  const fromStart = open("/runs/r_1/events");
  const both = open("/runs/r_1/events?lastEventId=1", { "last-event-id": "4" });
  await Promise.all([fromQuery, fromStart, both].map((c) => c.until((f) => f.id === 5)));
  assert.deepEqual(fromQuery.ids, [4, 5]);
  assert.deepEqual(fromStart.ids, [1, 2, 3, 4, 5]);
  assert.deepEqual(fromStart.frames[0], {
    id: 1,
    event: "run_started",
    data: { runId: RUN_ID, agentId: null, seq: 1, at: 1_700_000_000_000 },
  });
  assert.deepEqual(both.ids, [5]);
});

test("every client gets the stream whatever its Accept: curl's */*, none at all, even application/json", async (t) => {
  const { events, open } = await listen(t);
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  for (const accept of ["*/*", null, "application/json"]) {
    const client = open("/runs/r_1/events", { accept });
    const res = await client.response;
    assert.equal(res.statusCode, 200, `accept ${accept}`);
    assert.equal(res.headers["content-type"], "text/event-stream; charset=utf-8");
    assert.equal(res.headers["x-accel-buffering"], "no");
    const first = await client.until((f) => f.id === 1);
    assert.equal(first.event, "run_started");
  }
});

// A small slowConsumerLimit makes the queue overflow during the replay, which must re-read the ledger.
for (const [limit, snapshot] of [
  [500, false],
  [500, true],
  [5, false],
  [5, true],
] as const) {
  test(`live events after the replay arrive with no gap and no duplicate while appends run concurrently (limit ${limit}, ${snapshot ? "snapshot" : "live"} iterator)`, async (t) => {
    const { events, open } = await listen(t, { slowConsumerLimit: limit }, { snapshot });
    for (let i = 0; i < 200; i++) events.append(RUN_ID, "tool_start", ROOT_ID, { i });
    let appending = true;
    const writer = (async () => {
      // Appends interleave with the replay, which yields once per event (fakes.ts); appending at
      // half that pace lets the replay catch up, so the seam is crossed while appends go on.
      while (appending) {
        events.append(RUN_ID, "tool_end", ROOT_ID);
        events.ephemeral(RUN_ID, "text", ROOT_ID, { delta: "x" });
        await tick();
        await tick();
      }
    })();
    const client = open("/runs/r_1/events", { "last-event-id": "50" });
    await client.until((f) => f.id === 600);
    appending = false;
    await writer;
    const last = events.source.lastSeq(RUN_ID);
    await client.until((f) => f.id === last);
    assert.deepEqual(client.ids, range(51, last));
    assert.ok(
      client.frames.some((f) => f.event === "text" && f.id === undefined),
      "ephemeral events came through once live",
    );
  });
}

test("a heartbeat comment is sent every heartbeatMs", async (t) => {
  const { open } = await listen(t, { heartbeatMs: 20 });
  const client = open("/runs/r_1/events");
  await client.until((f) => f.comment === "heartbeat");
  const first = client.frames.length;
  await client.until((f) => client.frames.indexOf(f) >= first && f.comment === "heartbeat");
  assert.ok(
    client.frames.every((f) => f.comment === "heartbeat"),
    "an empty run sends nothing but heartbeats",
  );
});

// Node holds a response head back until the first body byte; here that would be the heartbeat.
test("a client of a quiet run gets its 200 at once, not at the first heartbeat", { timeout: 2_000 }, async (t) => {
  const { open } = await listen(t, { heartbeatMs: 60_000 });
  const res = await open("/runs/r_1/events").response;
  assert.equal(res.statusCode, 200);
});

// Bounded: a stream that never unsubscribed or never ended would otherwise hang the run, not fail it.
test("closing the client unsubscribes from the run", { timeout: 10_000 }, async (t) => {
  const { events, open } = await listen(t, { heartbeatMs: 20 });
  const client = open("/runs/r_1/events");
  await client.until((f) => f.comment === "heartbeat");
  assert.equal(events.listenerCount(RUN_ID), 1);
  client.close();
  while (events.listenerCount(RUN_ID) > 0) await new Promise((resolve) => setTimeout(resolve, 5));
});

test("closing the server ends open streams", { timeout: 10_000 }, async () => {
  const { app, events } = setup();
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const client = new SseClient(`${address}/runs/r_1/events`);
  await client.response;
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  await client.until((f) => f.id === 1);
  await app.close();
  await client.ended;
  assert.equal(events.listenerCount(RUN_ID), 0);
});

test("a purge ends the run's open streams cleanly, a plain delete does not; the stream is then a 404", {
  timeout: 10_000,
}, async (t) => {
  const { app, events, open, address } = await listen(t);
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  const client = open("/runs/r_1/events");
  await client.until((f) => f.id === 1);

  assert.equal((await app.inject({ method: "DELETE", url: "/runs/r_1" })).statusCode, 204);
  events.append(RUN_ID, "agent_ended", ROOT_ID, { outcome: "aborted" });
  await client.until((f) => f.id === 2);

  assert.equal((await app.inject({ method: "DELETE", url: "/runs/r_1?purge=true" })).statusCode, 204);
  await client.ended;
  assert.equal((await client.response).complete, true, "the response was ended, not cut off");
  assert.equal(events.listenerCount(RUN_ID), 0);
  const again = new SseClient(`${address}/runs/r_1/events`);
  t.after(() => again.close());
  assert.equal((await again.response).statusCode, 404);
});
