import { Level } from "level";
import type { Ledger, LedgerEvent } from "../src/ledger/ledger.ts";
import { eventKey } from "../src/ledger/ledger-keys.ts";
import { startBareSse, writeFrame } from "./bare-sse-server.ts";
import { startConsumers } from "./consumers.ts";
import { benchEvents, frameOf } from "./frames.ts";
import { fmtMs, fmtRate, fmtRatio, markdownTable, median, since } from "./stats.ts";

const FILL_CHUNK = 1000;

/** Append `count` events to the run through the ledger; the run's last seq after it. */
export async function fillRun(ledger: Ledger, runId: string, agentId: string, count: number): Promise<number> {
  for (let i = 0; i < count; i += FILL_CHUNK)
    await ledger.append(runId, benchEvents(agentId, i + 1, Math.min(FILL_CHUNK, count - i)));
  return ledger.lastSeq(runId);
}

/** What the daemon side measured while it ran; the raw side is measured after it stopped. */
export interface DaemonReplay {
  runId: string;
  lastSeq: number;
  /** One SSE client from Last-Event-ID 0 until it has `lastSeq`, milliseconds per rep. */
  sse: number[];
  /** `ledger.iterate(runId, 0)` to the end in-process, milliseconds per rep. */
  iterate: number[];
}

export async function replayThroughDaemon(
  url: string,
  ledger: Ledger,
  runId: string,
  reps: number,
): Promise<DaemonReplay> {
  const lastSeq = ledger.lastSeq(runId);
  const sse: number[] = [];
  const iterate: number[] = [];
  for (let r = 0; r < reps; r++) {
    sse.push(await replayOnce(`${url}/runs/${runId}/events`, lastSeq));
    const start = performance.now();
    for await (const _ of ledger.iterate(runId, 0));
    iterate.push(since(start));
    process.stderr.write(`\rreplay: rep ${r + 1}/${reps}   `);
  }
  process.stderr.write("\n");
  return { runId, lastSeq, sse, iterate };
}

async function replayOnce(url: string, lastSeq: number): Promise<number> {
  const consumers = startConsumers({ url, clients: 1, lastEventId: 0, targetSeq: lastSeq });
  const { ms } = await consumers.done;
  consumers.stop();
  return ms;
}

/**
 * The baselines, on the daemon's own ledger folder once it is closed: raw `level` iteration of the
 * same keys, and a bare `node:http` SSE writer replaying them to one client as the same frames.
 */
export async function replayBaselines(ledgerPath: string, daemon: DaemonReplay, reps: number): Promise<string> {
  const db = new Level<string, string>(ledgerPath);
  const ev = db.sublevel("ev");
  const range = { gt: eventKey(daemon.runId, 0), lte: eventKey(daemon.runId, daemon.lastSeq) };
  const bare = await startBareSse(async (res) => {
    for await (const page of pages(ev.values(range)))
      for (const value of page) await writeFrame(res, frameOf(JSON.parse(value) as LedgerEvent));
  });
  const raw: number[] = [];
  const bareSse: number[] = [];
  try {
    for (let r = 0; r < reps; r++) {
      const start = performance.now();
      let n = 0;
      for await (const page of pages(ev.values(range))) n += page.length;
      raw.push(since(start));
      if (n !== daemon.lastSeq) console.log(`note: raw iteration read ${n} events, expected ${daemon.lastSeq}`);
      bareSse.push(await replayOnce(bare.url, daemon.lastSeq));
    }
  } finally {
    await bare.close();
    await db.close();
  }

  const n = daemon.lastSeq;
  const row = (what: string, samples: number[]) => [
    what,
    fmtMs(median(samples)),
    fmtRate(n / (median(samples) / 1000)),
    fmtRatio(median(samples), median(raw)),
    fmtRatio(median(samples), median(bareSse)),
  ];
  return markdownTable(
    [
      `replay of a ${n.toLocaleString("en-US")}-event run (median of ${reps})`,
      "time",
      "events/s",
      "time / raw level iteration",
      "time / bare SSE",
    ],
    [
      row("swarmd SSE, one client from Last-Event-ID 0", daemon.sse),
      row("swarmd ledger.iterate in-process (no HTTP)", daemon.iterate),
      row("baseline: raw level iteration of the same keys", raw),
      row("baseline: raw level → bare node:http SSE, one client", bareSse),
    ],
  );
}

/** Read an iterator in pages of 1000 with `nextv`, level's fastest way through a range. */
async function* pages(iterator: {
  nextv(size: number): Promise<string[]>;
  close(): Promise<void>;
}): AsyncGenerator<string[]> {
  try {
    for (let page = await iterator.nextv(1000); page.length > 0; page = await iterator.nextv(1000)) yield page;
  } finally {
    await iterator.close();
  }
}
