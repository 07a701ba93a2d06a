/**
 * Ready benchmark (issue 12): how soon an agent answers, each figure beside a baseline measured in
 * the same run:
 * (i) `POST /runs` → the root `running` on the process runtime, beside a bare `node -e 0` start;
 * (ii) the same on the docker runtime, beside raw `docker create` + `docker start -a` of the
 *     sandbox image running `node -e 0`;
 * (iii) fan-out: children spawned at once (`POST /runs/:runId/agents`) until all are `running`,
 *     beside as many bare `node -e 0` starts two at a time (measured before and after it, averaged).
 * (i) and (iii) run without a pool (`SWARM_POOL_SIZE=0`), then with a pool of `BENCH_POOL`
 * sandboxes started ahead (default: `SWARM_POOL_SIZE`'s); before each timed start with a pool, the
 * pool is full again (its refill is not counted against either side).
 * `running` is the agent's `agent_state_changed` in the ledger: its harness answers on its socket.
 * Not a test: nothing is asserted. `npx tsx bench/ready.ts`.
 *
 * BENCH_ONLY=ready,docker,fanout (default all), BENCH_READY_REPS (20) timed starts after
 * BENCH_WARMUP (2) untimed ones, BENCH_FANOUT (100 children), BENCH_FANOUT_PROMPT (1: a second
 * fan-out whose children each get a one-step scripted prompt; 0: idle children only), BENCH_POOL
 * (pool size for the pooled rows; 0: no pooled rows).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { DEFAULT_POOL_SIZE, DEFAULT_START_CONCURRENCY } from "../src/config.ts";
import { errorMessage } from "../src/errors.ts";
import { createDockerRuntime } from "../src/sandbox/docker/docker-runtime.ts";
import { defaultSandboxImage } from "../src/sandbox/docker/sandbox-image.ts";
import { createProcessRuntime } from "../src/sandbox/process/process-runtime.ts";
import { type Daemon, startDaemon } from "../test/support/daemon.ts";
import { createDockerCli, dockerUnusable } from "./docker-cli.ts";
import { runningAt } from "./running-watch.ts";
import { env, fmtMs, fmtRatio, markdownTable, median, p90, since } from "./stats.ts";

const only = new Set((process.env.BENCH_ONLY ?? "ready,docker,fanout").split(","));
const REPS = env("BENCH_READY_REPS", 20);
const WARMUP = env("BENCH_WARMUP", 2);
const FANOUT = env("BENCH_FANOUT", 100);
const FANOUT_PROMPT = env("BENCH_FANOUT_PROMPT", 1) !== 0;
const POOL = env("BENCH_POOL", DEFAULT_POOL_SIZE);
const IDLE_SPEC = { name: "ready", script: [] };

/** Spawn → exit of a bare `node -e 0`, in ms. */
function bareNodeStart(): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(since(start)));
  });
}

/** `count` bare `node -e 0` starts, `concurrency` at a time: the whole batch's wall time, in ms. */
async function bareNodeBatch(count: number, concurrency: number): Promise<number> {
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await bareNodeStart();
    }),
  );
  return since(start);
}

/** One `POST /runs` → root `running`, in ms; the run is deleted afterwards (untimed). */
async function postToRunning(d: Daemon): Promise<number> {
  const posted = Date.now();
  const created = await d.call<{ runId: string; rootAgentId: string }>("POST", "/runs", {
    spec: IDLE_SPEC,
    keepAlive: true,
  });
  if (created.status !== 202) throw new Error(`POST /runs answered ${created.status}: ${JSON.stringify(created.body)}`);
  const watch = runningAt(d.ledger, created.body.runId);
  try {
    return (await watch.of(created.body.rootAgentId)) - posted;
  } finally {
    watch.stop();
    await d.call("DELETE", `/runs/${created.body.runId}`);
  }
}

interface Paired {
  ours: number[];
  baseline: number[];
}

/** `WARMUP` + `REPS` rounds of one swarmd start and one baseline start, alternating who goes first. */
async function paired(
  label: string,
  ours: () => Promise<number>,
  baseline: () => Promise<number>,
  settle: () => Promise<void> = async () => undefined,
): Promise<Paired> {
  const samples: Paired = { ours: [], baseline: [] };
  for (let i = 0; i < WARMUP + REPS; i++) {
    await settle();
    const pair = i % 2 === 0 ? [await ours(), await baseline()] : [await baseline(), await ours()].reverse();
    if (i >= WARMUP) {
      samples.ours.push(pair[0]!);
      samples.baseline.push(pair[1]!);
    }
    process.stderr.write(
      `\r${label}: ${i < WARMUP ? "warm-up" : "rep"} ${i < WARMUP ? i + 1 : i - WARMUP + 1}/${i < WARMUP ? WARMUP : REPS}   `,
    );
  }
  process.stderr.write("\n");
  return samples;
}

const cell = (samples: number[]) => `${fmtMs(median(samples))} (${fmtMs(p90(samples))})`;
const row = (what: string, s: Paired, baseline: string) => [
  what,
  cell(s.ours),
  `${cell(s.baseline)} ${baseline}`,
  fmtRatio(median(s.ours), median(s.baseline)),
];

interface FanOut {
  /** First spawn request → the last child `running`, ms. */
  allRunningMs: number;
  /** Per child: spawn request → its `running`, ms. */
  each: number[];
  failed: number;
  errors: string[];
  /** CPU time of the daemon's process (all its threads, not its sandboxes') from the first spawn request to the last child running, ms. */
  daemonCpuMs: number;
}

/** A root, then `count` children spawned at once (one request each, all in flight), until every one is `running`. */
async function fanOut(d: Daemon, count: number, prompted: boolean): Promise<FanOut> {
  const created = await d.call<{ runId: string; rootAgentId: string }>("POST", "/runs", {
    spec: { name: "fan-out", script: [] },
    keepAlive: true,
    budget: { spawnDepth: 1, maxAgents: count },
  });
  const { runId, rootAgentId } = created.body;
  const watch = runningAt(d.ledger, runId);
  try {
    await watch.of(rootAgentId);
    const errors: string[] = [];
    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    const children = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const spec = { name: `child-${i}`, script: prompted ? [{ text: `child ${i} done` }] : [] };
        const res = await d.call<{ agentId: string }>("POST", `/runs/${runId}/agents`, {
          parentAgentId: rootAgentId,
          spec,
          keepAlive: true,
          ...(prompted ? { prompt: "go" } : {}),
        });
        if (res.status !== 202) throw new Error(`spawn answered ${res.status}: ${JSON.stringify(res.body)}`);
        return res.body.agentId;
      }).map((spawned) =>
        spawned
          .then((agentId) => watch.of(agentId))
          .then(
            (at) => at - started,
            (err: unknown) => {
              errors.push(errorMessage(err));
              return undefined;
            },
          ),
      ),
    );
    const each = children.filter((ms): ms is number => ms !== undefined);
    const cpu = process.cpuUsage(cpuBefore);
    return {
      allRunningMs: Math.max(...each),
      each,
      failed: count - each.length,
      errors,
      daemonCpuMs: (cpu.user + cpu.system) / 1000,
    };
  } finally {
    watch.stop();
    await d.call("DELETE", `/runs/${runId}`);
  }
}

async function main(): Promise<void> {
  console.log(
    `# ready benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  const scratch = mkdtempSync(join(tmpdir(), "swarmd-bench-"));
  const quiet = { info: () => undefined, warn: () => undefined };
  console.log(
    `process runtime: sandbox starts at once: ${DEFAULT_START_CONCURRENCY} (SWARM_START_CONCURRENCY default); pooled rows: a pool of ${POOL} (SWARM_POOL_SIZE default ${DEFAULT_POOL_SIZE})`,
  );
  const rows: string[][] = [];
  const fanOutRows: string[][] = [];
  const notes: string[] = [];
  try {
    for (const poolSize of POOL > 0 ? [0, POOL] : [0]) {
      if (!only.has("ready") && !only.has("fanout")) break;
      const dataDir = join(scratch, `process-${poolSize}`);
      const runtime = createProcessRuntime({ dataDir, logger: quiet, pool: { size: poolSize } });
      const d = await startDaemon({ dataDir, runtime: () => runtime });
      const pool = runtime.pool;
      const full = async () => {
        await pool?.whenFull(AbortSignal.timeout(120_000));
      };
      const named = pool ? `, pool of ${poolSize}` : " (SWARM_POOL_SIZE=0)";
      try {
        if (poolSize === 0) console.log(`process runtime: isolation ${runtime.isolation}, freezer ${runtime.freezer}`);
        if (only.has("ready")) {
          rows.push(
            row(
              `process runtime (bubblewrap)${named}: POST /runs → root running`,
              await paired(`process${named}`, () => postToRunning(d), bareNodeStart, full),
              "(bare `node -e 0`, spawn → exit)",
            ),
          );
        }
        if (pool) {
          await full();
          notes.push(
            `memory the pool holds (${poolSize} sandboxes ready, their cgroups' counters): ${(pool.memoryBytes() / 1024 ** 2).toFixed(1)} MiB`,
          );
        }
        if (only.has("fanout")) {
          for (const prompted of FANOUT_PROMPT ? [false, true] : [false]) {
            await full();
            process.stderr.write(`fan-out${named}: ${FANOUT} children${prompted ? " with a prompt each" : ""}\n`);
            // The baseline before and after the fan-out, averaged: on a shared machine the load drifts
            // over the minutes a fan-out takes, and one baseline on one side of it skews the ratio.
            const before = await bareNodeBatch(FANOUT, 2);
            const ours = await fanOut(d, FANOUT, prompted);
            const after = await bareNodeBatch(FANOUT, 2);
            const baseline = (before + after) / 2;
            for (const error of ours.errors.slice(0, 5)) console.log(`fan-out: a child failed: ${error}`);
            notes.push(
              `fan-out${named}${prompted ? ", prompted" : ", idle"}: the daemon's CPU ${fmtMs(ours.daemonCpuMs)} (${fmtMs(ours.daemonCpuMs / FANOUT)} per child; its harness launcher's and sandboxes' not counted)`,
            );
            fanOutRows.push([
              `${prompted ? `${FANOUT} children, each with a one-step scripted prompt` : `${FANOUT} idle children (no prompt)`}${named}`,
              fmtMs(ours.allRunningMs),
              `${fmtMs(baseline)} (${FANOUT} × \`node -e 0\`, two at a time; ${fmtMs(before)} before, ${fmtMs(after)} after)`,
              fmtRatio(ours.allRunningMs, baseline),
              `${fmtMs(median(ours.each))}, ${fmtMs(p90(ours.each))}`,
              String(ours.failed),
            ]);
          }
        }
      } finally {
        await d.stop();
      }
    }
    if (only.has("docker")) rows.push(await dockerRow(join(scratch, "docker")));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  for (const note of notes) console.log(note);
  if (rows.length > 0) {
    console.log(
      `\n## Ready: POST → running\n\n${markdownTable([`median (p90), n=${REPS}`, "swarmd", "baseline", "swarmd / baseline"], rows)}`,
    );
  }
  if (fanOutRows.length > 0) {
    console.log(
      `\n## Fan-out: children spawned at once until all are running\n\n${markdownTable(
        [
          "children spawned at once (process runtime)",
          "swarmd: all running",
          "baseline",
          "swarmd / baseline",
          "spawn → running per child (median, p90)",
          "failed children",
        ],
        fanOutRows,
      )}`,
    );
  }
}

/** (ii): the docker runtime's POST → running beside raw `docker create` + `start -a` of `node -e 0`, or a row saying why not. */
async function dockerRow(scratch: string): Promise<string[]> {
  const image = defaultSandboxImage();
  const why = await dockerUnusable(image);
  if (why !== undefined) return ["docker runtime: POST /runs → root running", "—", `skipped: ${why}`, "—"];
  const cli = createDockerCli({ image, scratchDir: join(scratch, "cli"), tag: `ready-${process.pid}` });
  const d = await startDaemon({
    dataDir: join(scratch, "daemon"),
    runtime: (dataDir) => createDockerRuntime({ dataDir, image }),
  });
  try {
    const raw = async () => {
      const start = performance.now();
      const id = await cli.runNode();
      const ms = since(start);
      await cli.close(id);
      return ms;
    };
    return row(
      "docker runtime: POST /runs → root running",
      await paired("docker", () => postToRunning(d), raw),
      `(raw \`docker create\` + \`docker start -a\`, \`node -e 0\` in ${image})`,
    );
  } finally {
    await d.stop();
    await cli.cleanUp();
  }
}

await main();
