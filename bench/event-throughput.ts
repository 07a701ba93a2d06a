import { join } from "node:path";
import { Level } from "level";
import type { Ledger, LedgerEvent, NewEvent } from "../src/ledger/ledger.ts";
import { eventKey } from "../src/ledger/ledger-keys.ts";
import { type BareSse, startBareSse } from "./bare-sse-server.ts";
import { startConsumers } from "./consumers.ts";
import { benchEvents, frameOf, storedValueOf } from "./frames.ts";
import { fmtRate, fmtRatio, markdownTable, median } from "./stats.ts";

export interface ThroughputSetup {
  /** Base URL of the daemon under test. */
  url: string;
  ledger: Ledger;
  /** A live run of that daemon (the SSE route needs one) and an agent of it to tag events with. */
  runId: string;
  agentId: string;
  scratchDir: string;
  events: number;
  clients: number;
  reps: number;
}

/** How the daemon side appends: whole chunks per call, or one event per call with a chunk in flight. */
type Pattern = "chunk" | "single";
const CHUNK = 100;

/**
 * Persisted events per second through the ledger and SSE to live clients, beside raw `level`
 * batches of the same events pushed as the same frames by a bare `node:http` writer. Each rate
 * runs until every client has received the last seq; the rows without clients isolate storage.
 */
export async function measureThroughput(s: ThroughputSetup): Promise<string> {
  const events = benchEvents(s.agentId, 1, s.events);
  const db = new Level<string, string>(join(s.scratchDir, "raw-level"));
  const raw = db.sublevel("ev");
  const bare = await startBareSse();
  let rawSeq = 0;

  const oursAppend = async (pattern: Pattern) => {
    for (let i = 0; i < events.length; i += CHUNK) {
      const chunk = events.slice(i, i + CHUNK);
      if (pattern === "chunk") await s.ledger.append(s.runId, chunk);
      else await Promise.all(chunk.map((e) => s.ledger.append(s.runId, [e])));
    }
  };
  const rawAppend = async (to?: BareSse) => {
    for (let i = 0; i < events.length; i += CHUNK) {
      const at = Date.now();
      const stored = events.slice(i, i + CHUNK).map(
        (e: NewEvent): LedgerEvent => ({
          runId: s.runId,
          seq: ++rawSeq,
          type: e.type,
          agentId: e.agentId,
          at,
          data: e.data,
        }),
      );
      // The ledger's own shape of write: sublevel puts in one batch on the database, fsync'd.
      await db.batch(
        stored.map((e) => ({
          type: "put" as const,
          sublevel: raw,
          key: eventKey(s.runId, e.seq),
          value: storedValueOf(e),
        })),
        { sync: true },
      );
      if (to) for (const e of stored) to.broadcast(frameOf(e));
    }
  };
  /** Events per second of `write`, until the clients (if any) have the last seq. */
  const rate = async (
    write: () => Promise<void>,
    consumersAt?: { url: string; lastSeq: () => number },
  ): Promise<number> => {
    const consumers =
      consumersAt &&
      startConsumers({
        url: consumersAt.url,
        clients: s.clients,
        lastEventId: consumersAt.lastSeq(),
        targetSeq: consumersAt.lastSeq() + s.events,
      });
    await consumers?.ready;
    const start = performance.now();
    await write();
    const end = consumers ? (await consumers.done).doneAt : performance.now();
    consumers?.stop();
    return s.events / ((end - start) / 1000);
  };

  const ours = { url: `${s.url}/runs/${s.runId}/events`, lastSeq: () => s.ledger.lastSeq(s.runId) };
  const base = { url: bare.url, lastSeq: () => rawSeq };
  const variants = {
    sseChunk: () => rate(() => oursAppend("chunk"), ours),
    sseSingle: () => rate(() => oursAppend("single"), ours),
    sseBase: () => rate(() => rawAppend(bare), base),
    storeChunk: () => rate(() => oursAppend("chunk")),
    storeSingle: () => rate(() => oursAppend("single")),
    storeBase: () => rate(() => rawAppend()),
  };
  const results = new Map<keyof typeof variants, number[]>();
  try {
    for (let r = 0; r < s.reps; r++) {
      for (const [name, run] of Object.entries(variants) as Array<[keyof typeof variants, () => Promise<number>]>) {
        results.set(name, [...(results.get(name) ?? []), await run()]);
        process.stderr.write(`\revents: rep ${r + 1}/${s.reps} ${name}        `);
      }
    }
    process.stderr.write("\n");
  } finally {
    await bare.close();
    await db.close();
  }

  const m = (name: keyof typeof variants) => median(results.get(name) ?? []);
  const clients = `${s.clients} SSE clients`;
  return markdownTable(
    [
      `${s.events.toLocaleString("en-US")} persisted events (median of ${s.reps})`,
      "swarmd",
      "baseline",
      "swarmd / baseline",
    ],
    [
      [
        `ledger → ${clients}, ${CHUNK} events per append`,
        fmtRate(m("sseChunk")),
        `${fmtRate(m("sseBase"))} (raw level batch of ${CHUNK} → bare node:http SSE)`,
        fmtRatio(m("sseChunk"), m("sseBase")),
      ],
      [
        `ledger → ${clients}, 1 event per append (${CHUNK} in flight)`,
        fmtRate(m("sseSingle")),
        fmtRate(m("sseBase")),
        fmtRatio(m("sseSingle"), m("sseBase")),
      ],
      [
        `ledger only, ${CHUNK} events per append`,
        fmtRate(m("storeChunk")),
        `${fmtRate(m("storeBase"))} (raw level batch of ${CHUNK}, sync)`,
        fmtRatio(m("storeChunk"), m("storeBase")),
      ],
      [
        `ledger only, 1 event per append (${CHUNK} in flight)`,
        fmtRate(m("storeSingle")),
        fmtRate(m("storeBase")),
        fmtRatio(m("storeSingle"), m("storeBase")),
      ],
    ],
  );
}
