/**
 * Density: one run with a root and many keepAlive children, idle between turns, on the process
 * runtime with hibernation; the daemon's answers meanwhile; memory per idle agent; how fast an idle
 * agent comes back to a new prompt, beside a bare `node -e 0` start measured in the same run.
 *
 *   npx tsx bench/density.ts
 *
 * BENCH_DENSITY_AGENTS (1000, root included), BENCH_DENSITY_HIBERNATE_MS (2000),
 * BENCH_DENSITY_WAKES (20), BENCH_DENSITY_SPAWN_BATCH (50 spawn requests in flight).
 */
import { spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { createRuntime, type Daemon, type Json, sandboxRuntime, startDaemon } from "../test/support/daemon.ts";
import { sandboxProcesses, sum } from "./proc-memory.ts";
import { env, fmtMiB, fmtMs, fmtRatio, markdownTable, median, quantile, since } from "./stats.ts";

const AGENTS = env("BENCH_DENSITY_AGENTS", 1000);
const HIBERNATE_MS = env("BENCH_DENSITY_HIBERNATE_MS", 2000);
const WAKES = env("BENCH_DENSITY_WAKES", 20);
const BATCH = env("BENCH_DENSITY_SPAWN_BATCH", 50);
/** Issue 27's target for one agent's pause or resume among 1,000, p99. */
const CONTROL_TARGET_MS = 50;
/** How long the probes run again once every agent idles. */
const REST_PROBE_MS = 30_000;

/** `node -e 0`, start to exit, the same number of times as the wakes. */
function bareNodeStarts(reps: number): number[] {
  return Array.from({ length: reps }, () => {
    const start = performance.now();
    spawnSync(process.execPath, ["-e", "0"]);
    return since(start);
  });
}

/** GET /runs/:id and a control (pause, then resume, of one idle probe agent) every 250 ms until stopped. */
function probe(d: Daemon, runId: string, probeAgentId: string) {
  const reads: number[] = [];
  const controls: number[] = [];
  let on = true;
  const done = (async () => {
    for (let paused = false; on; paused = !paused) {
      let start = performance.now();
      await d.call("GET", `/runs/${runId}`);
      reads.push(since(start));
      start = performance.now();
      await d.call("POST", `/agents/${probeAgentId}/${paused ? "resume" : "pause"}`, {});
      controls.push(since(start));
      await sleep(250);
    }
  })();
  return {
    reads,
    controls,
    async stop() {
      on = false;
      await done;
    },
  };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(500);
  }
}

async function main(): Promise<void> {
  const bare = bareNodeStarts(Math.max(WAKES, 10));
  // A real runtime (process, or the one SWARM_E2E_RUNTIME names): the in-process test daemon's
  // default is the simulated one, whose agents have no process to start, hibernate or wake.
  const runtime = sandboxRuntime();
  console.error(`density: ${runtime} runtime`);
  const d = await startDaemon({
    hibernateAfterMs: HIBERNATE_MS,
    runtime: (dataDir) => createRuntime(runtime, dataDir),
  });
  try {
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "root", script: [] },
        keepAlive: true,
        budget: { spawnDepth: 2, maxAgents: AGENTS },
      })
    ).body;
    const { runId, rootAgentId } = created as { runId: string; rootAgentId: string };
    const spawn = (name: string) =>
      d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: rootAgentId,
        spec: { name, script: [{ text: `${name} done` }] },
        keepAlive: true,
      });
    const probeAgent = (await spawn("probe")).body.agentId as string;
    const probes = probe(d, runId, probeAgent);

    const spawnStart = performance.now();
    const children: string[] = [];
    for (let i = 0; children.length < AGENTS - 2; i++) {
      const batch = Math.min(BATCH, AGENTS - 2 - children.length);
      const answers = await Promise.all(Array.from({ length: batch }, (_, j) => spawn(`c${i * BATCH + j}`)));
      for (const a of answers) {
        if (a.status !== 202) throw new Error(`spawn refused: ${a.status} ${JSON.stringify(a.body)}`);
        children.push(a.body.agentId);
      }
    }
    const agents = () => d.call("GET", `/runs/${runId}`).then((r) => r.body.agents as Json[]);
    let lastReport = 0;
    await until(
      "every agent running",
      async () => {
        const all = await agents();
        const running = all.filter((a) => a.state === "running" || a.state === "paused").length;
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          process.stderr.write(
            `density: ${running}/${all.length} live, ${all.filter((a) => a.hibernated).length} hibernated, ${all.filter((a) => a.outcome !== null).length} ended\n`,
          );
        }
        if (all.some((a) => a.outcome !== null))
          throw new Error(`agents ended: ${JSON.stringify(all.filter((a) => a.outcome !== null).slice(0, 3))}`);
        return running === all.length;
      },
      3_600_000,
    );
    const allRunningMs = since(spawnStart);
    await until(
      "every idle child hibernated",
      async () => (await agents()).filter((a) => a.hibernated).length >= AGENTS - 2,
      600_000,
    );
    await probes.stop();
    // The same probes with all of them idle: what an operator sees of a settled wide run.
    const atRest = probe(d, runId, probeAgent);
    await sleep(REST_PROBE_MS);
    await atRest.stop();

    const sandboxIds = new Set((await d.runtime.list(AbortSignal.timeout(60_000))).map((s) => s.sandboxId));
    const procs = await sandboxProcesses(sandboxIds);
    (globalThis as { gc?: () => void }).gc?.();
    const daemonRss = process.memoryUsage().rss;
    const sandboxRss = sum(procs, "rss");

    // Wakes: a prompt to a hibernated child, until its harness is back (`agent_woke`, written once
    // it answers on its socket) and until its turn's result is readable.
    const wakes: number[] = [];
    const turns: number[] = [];
    for (const agentId of children.slice(0, WAKES)) {
      const woke = new Promise<number>((resolve) => {
        const off = d.ledger.subscribe(runId, (event) => {
          if (event.type === "agent_woke" && event.agentId === agentId) {
            off();
            resolve(performance.now());
          }
        });
      });
      const start = performance.now();
      await d.call("POST", `/agents/${agentId}/prompt`, { text: "wake up" });
      const result = (await d.call("GET", `/agents/${agentId}/result?wait=120`)).body;
      if (result.state !== "settled") throw new Error(`no result from ${agentId}`);
      turns.push(since(start));
      wakes.push((await woke) - start);
    }
    const bareP50 = median(bare);
    console.log(
      `### Density (\`bench/density.ts\`): ${AGENTS} agents in one run, hibernating after ${HIBERNATE_MS} ms idle\n`,
    );
    console.log(
      markdownTable(
        ["measure", "swarmd", "baseline", "ratio"],
        [
          ["all agents running after the spawns began", fmtMs(allRunningMs), "—", "—"],
          [
            `GET /runs/:id p99, while the agents start and settle (${probes.reads.length} reads)`,
            fmtMs(quantile(probes.reads, 0.99)),
            "100 ms target",
            fmtRatio(quantile(probes.reads, 0.99), 100),
          ],
          [
            `pause or resume of one agent p99, meanwhile (${probes.controls.length})`,
            fmtMs(quantile(probes.controls, 0.99)),
            `${CONTROL_TARGET_MS} ms target`,
            fmtRatio(quantile(probes.controls, 0.99), CONTROL_TARGET_MS),
          ],
          [
            `GET /runs/:id p99, all ${AGENTS} idle (${atRest.reads.length} reads)`,
            fmtMs(quantile(atRest.reads, 0.99)),
            "100 ms target",
            fmtRatio(quantile(atRest.reads, 0.99), 100),
          ],
          [
            `pause or resume of one agent p99, all idle (${atRest.controls.length})`,
            fmtMs(quantile(atRest.controls, 0.99)),
            `${CONTROL_TARGET_MS} ms target`,
            fmtRatio(quantile(atRest.controls, 0.99), CONTROL_TARGET_MS),
          ],
          [
            `hibernated agent: prompt → harness back (\`agent_woke\`) p50 (${wakes.length})`,
            fmtMs(median(wakes)),
            `\`node -e 0\` ${fmtMs(bareP50)}`,
            fmtRatio(median(wakes), bareP50),
          ],
          [
            `hibernated agent: prompt → its turn's result p50 (${turns.length})`,
            fmtMs(median(turns)),
            `\`node -e 0\` ${fmtMs(bareP50)}`,
            fmtRatio(median(turns), bareP50),
          ],
          [
            "memory per idle agent (daemon RSS + sandbox processes) / agents",
            fmtMiB((daemonRss + sandboxRss) / AGENTS),
            "—",
            "—",
          ],
          ["daemon RSS", fmtMiB(daemonRss), "—", "—"],
          [`sandbox processes left (${procs.length})`, fmtMiB(sandboxRss), "—", "—"],
        ],
      ),
    );
    await d.call("POST", `/agents/${rootAgentId}/stop`, { scope: "subtree" });
  } finally {
    await d.stop();
  }
}

await main();
