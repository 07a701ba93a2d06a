import { spawn } from "node:child_process";
import { type HarnessFixture, startHarness } from "../test/support/harness-fixture.ts";
import { processTree, procMemory, sum } from "./proc-memory.ts";
import { median, since } from "./stats.ts";

export interface BaselineMemory {
  /** RSS of a bare `node -e "setInterval(()=>{},1e9)"`, bytes. */
  bareNodeRss: number;
  /** One harness started directly (no sandbox, no daemon), idle: its whole process tree. */
  harnessRss: number;
  harnessPss: number;
  /** RSS of the harness's node process alone. */
  harnessNodeRss: number;
}

/**
 * The baseline processes, started before the agents and read at the same moment as them, so they
 * have idled as long (V8 shrinks an idle heap over minutes).
 */
export interface Baselines {
  /** Median ms from spawning a bare harness to its "harness ready" line. */
  harnessStartMs: number;
  read(): Promise<BaselineMemory>;
  stop(): Promise<void>;
}

const IDLE_SPEC = { name: "idle", script: [] };

export async function startBaselines(harnessStarts: number): Promise<Baselines> {
  const node = spawn(process.execPath, ["-e", "setInterval(()=>{},1e9)"], { stdio: "ignore" });
  const starts: number[] = [];
  let harness: HarnessFixture | undefined;
  for (let i = 0; i < harnessStarts; i++) {
    await harness?.stop();
    const start = performance.now();
    harness = await startHarness(IDLE_SPEC);
    starts.push(since(start));
  }
  const kept = harness ?? (await startHarness(IDLE_SPEC));
  return {
    harnessStartMs: median(starts),
    async read() {
      const pid = kept.child.pid ?? -1;
      const tree = await processTree(pid);
      return {
        bareNodeRss: (node.pid !== undefined && (await procMemory(node.pid))?.rss) || Number.NaN,
        harnessRss: sum(tree, "rss"),
        harnessPss: sum(tree, "pss"),
        harnessNodeRss: tree.find((p) => p.pid === pid)?.rss ?? Number.NaN,
      };
    },
    async stop() {
      node.kill();
      await kept.stop();
    },
  };
}
