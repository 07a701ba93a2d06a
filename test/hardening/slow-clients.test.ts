import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { type Daemon, startDaemon, waitForState } from "../support/daemon.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { IdReader } from "./sse-id-reader.ts";

/** The spec's cut-off (section 6.5): a client this many persisted events behind is disconnected. */
const SLOW_CONSUMER_LIMIT = 500;
const BATCHES = 60;
const BATCH = 50;
/** Appended directly to the ledger: at least this many persisted events, 4 KB each. */
const APPENDED = BATCHES * BATCH;
const PAYLOAD = "x".repeat(4 * 1024);
/**
 * Growth of the daemon's heap plus external memory allowed while the clients churn (measured:
 * about 25 MB). A reader is sent ~13 MB in all: a stream that kept writing to the 20 paused sockets
 * would hold 20 × 13 MB; replaying in pages of 1,000 events held ~100 MB more.
 */
const MEMORY_BOUND_BYTES = 64 * 1024 * 1024;

/** `global.gc` without starting node with --expose-gc: the flag can be set at runtime. */
function exposeGc(): () => void {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === "function") return existing;
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

interface Sample {
  heapAndExternal: number;
  rss: number;
}

function measure(gc: () => void): Sample {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heapAndExternal: m.heapUsed + m.external, rss: m.rss };
}

const MB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves once the run's ledger holds `seq`. */
function untilSeq(d: Daemon, runId: string, seq: number): Promise<void> {
  if (d.ledger.lastSeq(runId) >= seq) return Promise.resolve();
  return new Promise((resolve) => {
    const off = d.ledger.subscribe(runId, (e) => {
      if (e.persisted && e.seq >= seq) {
        off();
        resolve();
      }
    });
  });
}

describe("slow and churning event stream clients", () => {
  it("100 clients reading partially, pausing, dropping and reconnecting: memory stays bounded, paused ones are cut 500 behind, readers miss nothing", {
    timeout: 300_000,
  }, async (t) => {
    const gc = exposeGc();
    const seed = Number(process.env.HARDENING_SEED ?? 7);
    // The daemon's own cut-off, not one set here: this checks it is the spec's.
    const d = await startDaemon();
    const clients: IdReader[] = [];
    t.after(async () => {
      for (const client of clients) client.destroy();
      await d.stop();
    });
    const tools = {
      tools: Array.from({ length: 40 }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}` } })),
    };
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "noisy", script: [tools, tools, { text: "done" }] },
        keepAlive: true,
      })
    ).body;
    const { runId, rootAgentId } = created as { runId: string; rootAgentId: string };
    await waitForState(d, rootAgentId, "running");
    const connect = (lastEventId?: number) => {
      const client = new IdReader(d.url, runId, lastEventId);
      clients.push(client);
      return client;
    };
    const baseline = measure(gc);

    // 20 readers that keep reading to the end.
    const readers = Array.from({ length: 20 }, () => connect());
    // 20 that read their first events and then never read again.
    const paused = Array.from({ length: 20 }, () => connect());
    await Promise.all(paused.map((p) => p.waitForId(1)));
    for (const p of paused) p.pause();

    let producing = true;
    let total = 0;
    /** Where a churning client may safely wait: events that will certainly exist. */
    const reachable = () => (producing ? APPENDED : total);

    // 30 that connect, read a little (or nothing) and drop, twice each.
    const droppers = Array.from({ length: 30 }, async (_, i) => {
      const rng = seededRandom(seed * 100 + i);
      for (let round = 0; round < 2; round++) {
        const from = i % 3 === 1 ? Math.floor(rng() * d.ledger.lastSeq(runId)) : undefined;
        const client = connect(from);
        if (i % 3 === 2 && round === 0) {
          client.destroy(); // gone before the response head
          continue;
        }
        const want = Math.min(reachable(), (from ?? 0) + 1 + Math.floor(rng() * 300));
        await client.waitForId(want).catch(() => undefined);
        if (i % 3 === 0) {
          client.pause(); // stops reading for a while, then drops without ever reading again
          await untilSeq(d, runId, Math.min(reachable(), d.ledger.lastSeq(runId) + 200));
        }
        client.destroy();
      }
    });

    // 30 that read in pieces, each time dropping and reconnecting with their last id.
    let cutReconnecters = 0;
    const reconnecters = Array.from({ length: 30 }, async (_, i) => {
      const rng = seededRandom(seed * 1000 + i);
      const seen: number[] = [];
      for (;;) {
        const client = connect(seen.at(-1));
        const target = Math.min(reachable(), (seen.at(-1) ?? 0) + 1 + Math.floor(rng() * 1_500));
        try {
          await client.waitForId(target);
        } catch {
          cutReconnecters++; // cut off while behind: the reconnect below continues without loss
        }
        client.destroy();
        seen.push(...client.ids);
        if (!producing && (seen.at(-1) ?? 0) >= total) return seen;
      }
    });

    // The run emits: the agent's own tool calls, plus volume appended to its ledger with ephemeral
    // deltas in between. Each batch waits for the readers, so only clients that stop reading fall behind.
    assert.equal((await d.call("POST", `/agents/${rootAgentId}/prompt`, { text: "go" })).status, 202);
    const samples: Sample[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      await d.ledger.append(
        runId,
        Array.from({ length: BATCH }, (_, i) => ({
          type: "tool_end",
          agentId: rootAgentId,
          data: { batch, i, output: PAYLOAD },
        })),
      );
      for (let i = 0; i < 5; i++)
        d.ledger.publish(runId, { type: "text", agentId: rootAgentId, data: { delta: PAYLOAD.slice(0, 512) } });
      const last = d.ledger.lastSeq(runId);
      await Promise.all(readers.map((r) => r.waitForId(last)));
      if (batch % 5 === 4) samples.push(measure(gc));
    }
    const result = await d.call("GET", `/agents/${rootAgentId}/result?wait=120`);
    assert.equal(result.body.result, "done");
    total = d.ledger.lastSeq(runId);
    producing = false;
    await Promise.all(readers.map((r) => r.waitForId(total)));
    const seenByReconnecters = await Promise.all(reconnecters);
    await Promise.all(droppers);
    samples.push(measure(gc));

    const peak = samples.reduce((max, s) => (s.heapAndExternal > max.heapAndExternal ? s : max));
    const growth = peak.heapAndExternal - baseline.heapAndExternal;
    t.diagnostic(
      `${clients.length} connections, ${total} persisted events; heap+external ${MB(baseline.heapAndExternal)} → peak ${MB(peak.heapAndExternal)} (+${MB(growth)}), ` +
        `rss ${MB(baseline.rss)} → ${MB(Math.max(...samples.map((s) => s.rss)))}; reconnecters cut ${cutReconnecters} times`,
    );
    assert.ok(total >= APPENDED, `${total} events`);
    assert.ok(growth < MEMORY_BOUND_BYTES, `memory grew by ${MB(growth)} (bound ${MB(MEMORY_BOUND_BYTES)})`);

    // Readers got every persisted event exactly once, in order, and were never cut.
    for (const [i, reader] of readers.entries()) {
      assert.equal(reader.status, 200);
      assert.equal(reader.ended, false, `reader ${i} was disconnected`);
      assert.deepEqual(reader.ids, range(1, total), `reader ${i} saw every id`);
    }
    // Reading in pieces across reconnects also loses nothing and repeats nothing.
    for (const [i, seen] of seenByReconnecters.entries()) assert.deepEqual(seen, range(1, total), `reconnecter ${i}`);

    // Paused clients were cut once 500 events behind; they see it only when they read again.
    for (const p of paused) p.resume();
    await within(Promise.all(paused.map((p) => p.untilEnded())), 30_000, "the server to have cut every paused client");
    for (const [i, p] of paused.entries()) {
      const last = p.lastId ?? 0;
      assert.ok(
        last <= total - SLOW_CONSUMER_LIMIT,
        `paused client ${i} was cut at least ${SLOW_CONSUMER_LIMIT} behind (got to ${last} of ${total})`,
      );
      assert.deepEqual(p.ids, range(1, last), `paused client ${i}: what arrived before the cut is gap-free`);
    }
    t.diagnostic(
      `paused clients got to ids ${Math.min(...paused.map((p) => p.lastId ?? 0))}..${Math.max(...paused.map((p) => p.lastId ?? 0))} of ${total} before the cut`,
    );
    // And reconnecting from where the cut left one continues with nothing missed.
    const last = paused[0]?.lastId ?? 0;
    const again = connect(last);
    await again.waitForId(total);
    assert.deepEqual(again.ids, range(last + 1, total));
  });
});
