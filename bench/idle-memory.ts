import { totalmem } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { createRuntime, type Daemon, sandboxRuntime, startDaemon } from "../test/support/daemon.ts";
import { type AgentWatch, watchAgents } from "./agent-watch.ts";
import { type BaselineMemory, startBaselines } from "./memory-baselines.ts";
import { memAvailable, type ProcMemory, sandboxProcesses, sum } from "./proc-memory.ts";
import { fmtMiB, fmtMs, fmtRatio, markdownTable, median, p90, since } from "./stats.ts";

export interface IdleMemoryOptions {
  /** Agents wanted, root included. */
  agents: number;
  /** Agents provisioning at once. */
  concurrency: number;
  /** Stop spawning before the host's MemAvailable would drop below this many bytes. */
  reserveBytes: number;
  /** Stop spawning after this long. */
  spawnBudgetMs: number;
  /** Idle time before memory is read, so start-up garbage and caches have settled. */
  settleMs: number;
}

const IDLE_SPEC = { name: "idle", script: [] };
const RUNNING_TIMEOUT_MS = 180_000;
/** Assumed cost of an agent until one has been measured: keeps the first spawns from overshooting. */
const FIRST_ESTIMATE = 320 * 1024 ** 2;

const RUNTIME = sandboxRuntime();

const gc = () => (globalThis as { gc?: () => void }).gc?.();

/**
 * Memory per idle agent: one run, its root and children spawned over HTTP (scripted, keepAlive,
 * no prompt) on the process runtime, each with a real harness. Reads the daemon's RSS and the
 * sandbox processes' VmRSS (and PSS), beside a bare node process and one bare idle harness.
 */
export async function measureIdleMemory(o: IdleMemoryOptions): Promise<string> {
  const baselines = await startBaselines(3);
  gc();
  // A real runtime (process, or the one SWARM_E2E_RUNTIME names), hibernation off: the in-process
  // test daemon's default is the simulated one, whose agents hold no process at all.
  const d = await startDaemon({ runtime: (dataDir) => createRuntime(RUNTIME, dataDir) });
  let tornDown: Promise<number> | undefined;
  const tearDown = () => (tornDown ??= tearDownDaemon(d));
  const onSigint = () => void tearDown().then(() => process.exit(130));
  process.once("SIGINT", onSigint);
  try {
    gc();
    const before = {
      rss: process.memoryUsage().rss,
      heap: process.memoryUsage().heapUsed,
      available: await memAvailable(),
    };
    const spawned = await spawnIdleAgents(d, o, before.available);
    process.stderr.write(`\nidle: settling ${o.settleMs} ms\n`);
    await sleep(o.settleMs);
    gc();
    const sandboxIds = new Set((await d.runtime.list(AbortSignal.timeout(60_000))).map((s) => s.sandboxId));
    const procs = await sandboxProcesses(sandboxIds);
    const after = {
      rss: process.memoryUsage().rss,
      heap: process.memoryUsage().heapUsed,
      available: await memAvailable(),
    };
    const baseline = await baselines.read();
    const teardownMs = await tearDown();
    return render(o, spawned, { before, after, procs, baseline, harnessStartMs: baselines.harnessStartMs, teardownMs });
  } finally {
    await tearDown();
    await baselines.stop();
    process.off("SIGINT", onSigint);
  }
}

interface Spawned {
  count: number;
  /** POST → `running`, milliseconds, per agent. */
  times: number[];
  stopReason: string | undefined;
}

async function spawnIdleAgents(d: Daemon, o: IdleMemoryOptions, availableBefore: number): Promise<Spawned> {
  const started = performance.now();
  const times: number[] = [];
  let failures = 0;
  let stopReason: string | undefined;

  const t0 = performance.now();
  const created = await d.call<{ runId: string; rootAgentId: string }>("POST", "/runs", {
    spec: IDLE_SPEC,
    keepAlive: true,
    budget: { maxAgents: o.agents, spawnDepth: 1 },
  });
  if (created.status !== 201 && created.status !== 202) throw new Error(`POST /runs answered ${created.status}`);
  const { runId, rootAgentId } = created.body;
  const watch: AgentWatch = watchAgents(d.ledger, runId);
  await watch.running(rootAgentId, RUNNING_TIMEOUT_MS);
  times.push(since(t0));

  const spawnOne = async () => {
    const t = performance.now();
    const res = await d.call<{ agentId: string }>("POST", `/runs/${runId}/agents`, {
      parentAgentId: rootAgentId,
      spec: IDLE_SPEC,
      keepAlive: true,
    });
    if (res.status !== 201 && res.status !== 202)
      throw new Error(`spawn answered ${res.status}: ${JSON.stringify(res.body)}`);
    await watch.running(res.body.agentId, RUNNING_TIMEOUT_MS);
    times.push(since(t));
  };
  const inFlight = new Set<Promise<void>>();
  let shown = -1;
  const progress = async () => {
    const available = await memAvailable();
    if (watch.runningCount() !== shown) {
      shown = watch.runningCount();
      process.stderr.write(
        `\ridle: ${shown}/${o.agents} agents running, ${(available / 1024 ** 3).toFixed(1)} GiB available, ${Math.round(since(started) / 1000)} s   `,
      );
    }
    return available;
  };

  for (let i = 1; i < o.agents && stopReason === undefined; i++) {
    while (inFlight.size >= o.concurrency) await Promise.race(inFlight);
    const available = await progress();
    const running = watch.runningCount();
    const perAgent = Math.max(FIRST_ESTIMATE, (availableBefore - available) / Math.max(1, running));
    if (available - perAgent * (inFlight.size + 1) < o.reserveBytes) {
      stopReason = `memory: the next agent would leave less than ${fmtMiB(o.reserveBytes)} available (BENCH_MEM_RESERVE_MIB)`;
    } else if (since(started) > o.spawnBudgetMs) {
      stopReason = `time: spawning took longer than ${Math.round(o.spawnBudgetMs / 1000)} s (BENCH_SPAWN_SECONDS)`;
    } else if (failures >= 3) {
      stopReason = "three spawns failed";
    } else {
      const p: Promise<void> = spawnOne()
        .catch((err: unknown) => {
          failures++;
          process.stderr.write(`\nidle: spawn failed: ${(err as Error).message}\n`);
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }
  await Promise.all(inFlight);
  await progress();
  watch.stop();
  return { count: watch.runningCount(), times, stopReason };
}

/** Delete every run, close every sandbox, and say how long it took (ms). */
async function tearDownDaemon(d: Daemon): Promise<number> {
  const start = performance.now();
  for (const runId of d.ledger.runIds()) await d.call("DELETE", `/runs/${runId}`).catch(() => undefined);
  const ids = new Set((await d.runtime.list(AbortSignal.timeout(60_000))).map((s) => s.sandboxId));
  await d.stop();
  const ms = since(start);
  const left = await sandboxProcesses(ids);
  if (left.length > 0) {
    console.log(`note: ${left.length} sandbox processes outlived the teardown; killing them`);
    for (const p of left) process.kill(p.pid, "SIGKILL");
  }
  return ms;
}

interface Measured {
  before: { rss: number; heap: number; available: number };
  after: { rss: number; heap: number; available: number };
  procs: ProcMemory[];
  baseline: BaselineMemory;
  harnessStartMs: number;
  teardownMs: number;
}

const gib = (bytes: number) => (bytes / 1024 ** 3).toFixed(0);

function render(o: IdleMemoryOptions, spawned: Spawned, m: Measured): string {
  const n = spawned.count;
  const per = (bytes: number) => bytes / n;
  const b = m.baseline;
  const byName = (name: string) => m.procs.filter((p) => p.name === name);
  // Node 24 names its main thread, so /proc's comm of a harness says `MainThread` (Node 20: `node`).
  const harness = m.procs.filter((p) => p.name === "node" || p.name === "MainThread");
  const daemonGrowth = m.after.rss - m.before.rss;
  const sandboxRss = sum(m.procs, "rss");
  const lines = [
    `idle agents: ${n} of ${o.agents} wanted${spawned.stopReason ? `; stopped spawning on ${spawned.stopReason}` : ""}.`,
    `sandbox processes: ${m.procs.length} (${[...new Set(m.procs.map((p) => p.name))].map((name) => `${byName(name).length} ${name}`).join(", ")}); ` +
      `daemon RSS ${fmtMiB(m.before.rss)} → ${fmtMiB(m.after.rss)}, heap ${fmtMiB(m.before.heap)} → ${fmtMiB(m.after.heap)}; ` +
      `host MemAvailable ${fmtMiB(m.before.available)} → ${fmtMiB(m.after.available)}; teardown of ${n} agents ${fmtMs(m.teardownMs)}.`,
    `1,000 idle agents at this rate: about ${gib(per(sum(m.procs, "pss")) * 1000)} GiB of sandbox PSS (${gib(per(sandboxRss) * 1000)} GiB summed VmRSS); this machine has ${gib(totalmem())} GiB.`,
    "",
  ];
  return `${lines.join("\n")}\n${markdownTable(
    [`per idle agent (${n} agents, ${RUNTIME} runtime)`, "swarmd", "baseline", "swarmd / baseline"],
    [
      [
        "sandbox processes, VmRSS (all)",
        fmtMiB(per(sandboxRss)),
        `${fmtMiB(b.harnessRss)} (one bare idle harness, its process tree)`,
        fmtRatio(per(sandboxRss), b.harnessRss),
      ],
      [
        "harness node process, VmRSS",
        fmtMiB(per(sum(harness, "rss"))),
        `${fmtMiB(b.harnessNodeRss)} (bare harness node)`,
        fmtRatio(per(sum(harness, "rss")), b.harnessNodeRss),
      ],
      [
        "sandbox processes, PSS",
        fmtMiB(per(sum(m.procs, "pss"))),
        `${fmtMiB(b.harnessPss)} (bare harness PSS)`,
        fmtRatio(per(sum(m.procs, "pss")), b.harnessPss),
      ],
      [
        "daemon RSS growth",
        fmtMiB(per(daemonGrowth)),
        `${fmtMiB(b.bareNodeRss)} (bare idle node process)`,
        fmtRatio(per(daemonGrowth), b.bareNodeRss),
      ],
      ["daemon heap growth (after gc)", fmtMiB(per(m.after.heap - m.before.heap)), "—", "—"],
      [
        "daemon + sandbox VmRSS",
        fmtMiB(per(daemonGrowth + sandboxRss)),
        fmtMiB(b.bareNodeRss),
        fmtRatio(per(daemonGrowth + sandboxRss), b.bareNodeRss),
      ],
      ["host MemAvailable drop (whole machine, noisy)", fmtMiB(per(m.before.available - m.after.available)), "—", "—"],
      [
        `POST → running (median, p90 of ${spawned.times.length})`,
        `${fmtMs(median(spawned.times))}, ${fmtMs(p90(spawned.times))}`,
        `${fmtMs(m.harnessStartMs)} (bare harness start, median of 3)`,
        fmtRatio(median(spawned.times), m.harnessStartMs),
      ],
    ],
  )}`;
}
