/**
 * What one prompted agent's sandbox costs (issue 27): the CPU time and the largest process's RSS of
 * a process-runtime sandbox whose agent ran one one-step scripted turn, read from its cgroup
 * (`cpu.stat` on the unified hierarchy: bubblewrap, the harness's node and what it started) once the
 * turn's result is in, beside the CPU time of a bare `node -e 0` measured in the same run (the
 * bench's reaped children, `/proc/self/stat`). One agent at a time, no pool: the figure is the
 * harness's start, pi's loading, the session and the turn, not a burst's contention.
 * Not a test: nothing is asserted. `npx tsx bench/prompted-harness.ts`. BENCH_PROMPTED_REPS (10).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { createProcessRuntime } from "../src/sandbox/process/process-runtime.ts";
import { startDaemon } from "../test/support/daemon.ts";
import { env, fmtMiB, fmtMs, fmtRatio, markdownTable, median } from "./stats.ts";

const REPS = env("BENCH_PROMPTED_REPS", 10);
const CGROUPS = ["/sys/fs/cgroup/unified/swarmd", "/sys/fs/cgroup/swarmd"];
const TICK_MS = 10; // clock ticks of /proc/<pid>/stat

/** CPU ms of this process's reaped children so far (cutime + cstime). */
function childrenCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

/** CPU ms of `node -e 0`, the median of `REPS` runs of ten (ticks are 10 ms). */
function bareNodeCpuMs(): number {
  const runs: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const before = childrenCpuMs();
    for (let i = 0; i < 10; i++) spawnSync(process.execPath, ["-e", "0"]);
    runs.push((childrenCpuMs() - before) / 10);
  }
  return median(runs);
}

function sandboxCgroup(sandboxId: string): string {
  for (const base of CGROUPS) {
    const name = (() => {
      try {
        return readdirSync(base).find((n) => n.includes(sandboxId));
      } catch {
        return undefined;
      }
    })();
    if (name) return `${base}/${name}`;
  }
  throw new Error(`no cgroup with cpu.stat for sandbox ${sandboxId} (the bench needs a cgroup v2 freezer)`);
}

const quiet = { info: () => undefined, warn: () => undefined };

async function main(): Promise<void> {
  console.log(
    `# prompted-harness benchmark: ${cpus().length} cores, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  const d = await startDaemon({
    runtime: (dataDir) => createProcessRuntime({ dataDir, logger: quiet, pool: { size: 0 } }),
  });
  const cpu: number[] = [];
  const rss: number[] = [];
  try {
    for (let rep = 0; rep < REPS + 1; rep++) {
      const created = await d.call("POST", "/runs", {
        spec: { name: "prompted", script: [{ text: "hello" }] },
        prompt: "go",
        keepAlive: true,
      });
      const { runId, rootAgentId } = created.body as { runId: string; rootAgentId: string };
      while ((await d.call("GET", `/agents/${rootAgentId}/result`)).body.result === null) await sleep(50);
      await sleep(300); // the turn's last events written
      const sandboxId = (await d.call("GET", `/runs/${runId}`)).body.agents[0].sandboxId as string;
      const dir = sandboxCgroup(sandboxId);
      const usage = Number(/usage_usec (\d+)/.exec(readFileSync(`${dir}/cpu.stat`, "utf8"))?.[1]) / 1000;
      const pids = readFileSync(`${dir}/cgroup.procs`, "utf8").trim().split("\n").filter(Boolean);
      const largest = Math.max(
        0,
        ...pids.map((pid) => {
          try {
            return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
          } catch {
            return 0; // gone meanwhile
          }
        }),
      );
      // The first one is not counted: it warms the page cache.
      if (rep > 0) {
        cpu.push(usage);
        rss.push(largest);
      }
      await d.call("POST", `/agents/${rootAgentId}/stop`, {});
    }
  } finally {
    await d.stop();
  }
  const bare = bareNodeCpuMs();
  console.log(
    markdownTable(
      [`median of ${REPS}`, "swarmd", "baseline", "swarmd / baseline"],
      [
        [
          "CPU of a sandbox whose agent ran one scripted turn",
          fmtMs(median(cpu)),
          `${fmtMs(bare)} (bare \`node -e 0\`)`,
          fmtRatio(median(cpu), bare),
        ],
        ["its largest process's RSS", fmtMiB(median(rss)), "—", "—"],
      ],
    ),
  );
  console.log(`CPU per sandbox: ${cpu.map((c) => c.toFixed(0)).join(", ")} ms`);
}

await main();
