import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep, setImmediate as tick } from "node:timers/promises";
import { DaemonMetrics } from "../../src/metrics/daemon-metrics.ts";
import { ROOT_ID, RUN_ID, setup } from "./fakes.ts";
import { SseClient } from "./sse-client.ts";

// Big events fill loopback socket buffers (a few MB) quickly, so backpressure shows up for real.
const PAYLOAD = "x".repeat(64 * 1024);
const LIMIT = 5;

test("a client that stops reading is cut off after slowConsumerLimit persisted events and resumes without loss", async (t) => {
  const { app, events } = setup({ slowConsumerLimit: LIMIT });
  t.after(() => app.close());
  const address = await app.listen({ host: "127.0.0.1", port: 0 });

  const slow = new SseClient(`${address}/runs/${RUN_ID}/events`);
  t.after(() => slow.close());
  await slow.response;
  events.append(RUN_ID, "run_started", null, { runId: RUN_ID });
  await slow.until((f) => f.id === 1);
  slow.pause();

  // Append until the server gives up on the client; it unsubscribes when it closes the stream.
  let appended = 1;
  while (events.listenerCount(RUN_ID) > 0) {
    assert.ok(appended < 2_000, "the server never cut off a client that does not read");
    events.append(RUN_ID, "tool_end", ROOT_ID, { output: PAYLOAD });
    events.ephemeral(RUN_ID, "tool_update", ROOT_ID, { output: "dropped while blocked" });
    appended++;
    await tick();
  }
  // The cut came after exactly LIMIT events that could not be written: anything appended later
  // would have found no subscriber.
  const cutAt = appended;

  // Reading again drains what the kernel still held, then the connection ends.
  slow.resume();
  await slow.ended;
  const received = slow.ids;
  const last = received.at(-1) ?? 0;
  assert.deepEqual(
    received,
    Array.from({ length: last }, (_, i) => i + 1),
    "what arrived before the cut is gap-free",
  );
  assert.ok(last <= cutAt - LIMIT, `the last ${LIMIT} events were held back, got up to ${last} of ${cutAt}`);

  // Events keep coming while the client is away; reconnecting from its last id loses nothing.
  for (let i = 0; i < 3; i++) events.append(RUN_ID, "turn_end", ROOT_ID);
  const total = events.source.lastSeq(RUN_ID);
  const again = new SseClient(`${address}/runs/${RUN_ID}/events`, { "last-event-id": String(last) });
  t.after(() => again.close());
  await again.until((f) => f.id === total, 10_000);
  assert.deepEqual(
    again.ids,
    Array.from({ length: total - last }, (_, i) => last + 1 + i),
  );
});

test("ephemeral events are dropped for a blocked client while persisted ones wait, each counted in the metrics", async (t) => {
  const metrics = new DaemonMetrics();
  const { app, events } = setup({ slowConsumerLimit: 100_000, metrics });
  t.after(() => app.close());
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const client = new SseClient(`${address}/runs/${RUN_ID}/events`);
  t.after(() => client.close());
  await client.response;
  client.pause();
  // Enough data that the server's writes stop succeeding.
  for (let i = 0; i < 300; i++) {
    events.append(RUN_ID, "tool_end", ROOT_ID, { output: PAYLOAD });
    events.ephemeral(RUN_ID, "text", ROOT_ID, { delta: String(i) });
    await tick();
  }
  events.append(RUN_ID, "turn_end", ROOT_ID);
  const total = events.source.lastSeq(RUN_ID);
  client.resume();
  await client.until((f) => f.id === total, 10_000);
  assert.deepEqual(
    client.ids,
    Array.from({ length: total }, (_, i) => i + 1),
    "every persisted event arrives, in order",
  );
  const texts = client.frames.filter((f) => f.event === "text").length;
  assert.ok(texts < 300, `some ephemeral events were dropped (${texts} of 300 arrived)`);
  const dropped = (await metrics.registry.getSingleMetric("swarmd_sse_ephemeral_events_dropped_total")?.get())
    ?.values[0]?.value;
  assert.equal(dropped, 300 - texts, "swarmd_sse_ephemeral_events_dropped_total counts each one not sent");
  // The connection stays usable once the client reads again.
  await sleep(10);
  events.ephemeral(RUN_ID, "text", ROOT_ID, { delta: "after" });
  await client.until((f) => f.event === "text" && f.data?.delta === "after");
});
