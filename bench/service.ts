/**
 * Service benchmark (issue 4), each figure beside a baseline measured in the same run:
 * (a) persisted events per second through the ledger and SSE to live clients,
 * (b) replay of a 100,000-event run over SSE,
 * (c) memory per idle agent on the process runtime.
 * Not a test: nothing is asserted. `make bench`, or `node --expose-gc --import tsx bench/service.ts`.
 *
 * BENCH_ONLY=events,replay,memory (default all), BENCH_EVENTS (20000), BENCH_CLIENTS (10),
 * BENCH_REPLAY_EVENTS (100000), BENCH_SERVICE_REPS (5), BENCH_AGENTS (1000), BENCH_SPAWN_CONCURRENCY (2),
 * BENCH_MEM_RESERVE_MIB (8192), BENCH_SPAWN_SECONDS (480), BENCH_SETTLE_MS (5000).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startDaemon } from "../test/support/daemon.ts";
import { watchAgents } from "./agent-watch.ts";
import { measureThroughput } from "./event-throughput.ts";
import { measureIdleMemory } from "./idle-memory.ts";
import { type DaemonReplay, fillRun, replayBaselines, replayThroughDaemon } from "./replay-speed.ts";
import { env } from "./stats.ts";

const only = new Set((process.env.BENCH_ONLY ?? "events,replay,memory").split(","));
const reps = env("BENCH_SERVICE_REPS", 5);

async function main(): Promise<void> {
  console.log(
    `# service benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  if (!(globalThis as { gc?: unknown }).gc) console.log("note: run with --expose-gc for steadier daemon RSS figures");
  const scratch = mkdtempSync(join(tmpdir(), "swarmd-bench-"));
  try {
    // Memory first, while the daemon's process has not yet grown a heap for the other sections.
    if (only.has("memory")) {
      console.log(
        `\n## Memory per idle agent\n\n${await measureIdleMemory({
          agents: env("BENCH_AGENTS", 1000),
          concurrency: env("BENCH_SPAWN_CONCURRENCY", 2),
          reserveBytes: env("BENCH_MEM_RESERVE_MIB", 8192) * 1024 ** 2,
          spawnBudgetMs: env("BENCH_SPAWN_SECONDS", 480) * 1000,
          settleMs: env("BENCH_SETTLE_MS", 5000),
        })}`,
      );
    }
    if (only.has("events") || only.has("replay")) await ledgerAndSse(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** (a) and (b) share one daemon and one run; the raw replay baselines read its ledger after it stops. */
async function ledgerAndSse(scratch: string): Promise<void> {
  const dataDir = join(scratch, "daemon");
  const d = await startDaemon({ dataDir });
  let replay: DaemonReplay | undefined;
  let throughput: string | undefined;
  try {
    const created = await d.call<{ runId: string; rootAgentId: string }>("POST", "/runs", {
      spec: { name: "bench", script: [] },
      keepAlive: true,
    });
    const { runId, rootAgentId } = created.body;
    const watch = watchAgents(d.ledger, runId);
    await watch.running(rootAgentId, 120_000);
    watch.stop();
    if (only.has("replay")) {
      const count = env("BENCH_REPLAY_EVENTS", 100_000);
      process.stderr.write(`replay: appending ${count} events\n`);
      await fillRun(d.ledger, runId, rootAgentId, count);
      replay = await replayThroughDaemon(d.url, d.ledger, runId, reps);
    }
    if (only.has("events")) {
      throughput = await measureThroughput({
        url: d.url,
        ledger: d.ledger,
        runId,
        agentId: rootAgentId,
        scratchDir: scratch,
        events: env("BENCH_EVENTS", 20_000),
        clients: env("BENCH_CLIENTS", 10),
        reps,
      });
    }
  } finally {
    await d.stop();
  }
  if (throughput) console.log(`\n## Persisted events through ledger and SSE\n\n${throughput}`);
  if (replay) console.log(`\n## Replay\n\n${await replayBaselines(join(dataDir, "ledger"), replay, reps)}`);
}

await main();
