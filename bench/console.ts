/**
 * Web console benchmark: how fast the page opens a run of 1,000 agents and how smoothly it draws
 * while that run's events stream (the console's budgets: its current tree within 2 s of opening,
 * busy and once ended; frames at p95 under 50 ms while events stream and the tree scrolls).
 * A daemon process on the simulated runtime, Debian's Chromium through playwright-core, the fleet of
 * test/support/console-fleet.ts (1,000 agents in four levels, a turn of five tool calls each, about
 * 35,000 events). Baselines, measured in the same run on the same page and daemon:
 * - opening: the same console opening a run of one agent;
 * - frames: the same page at rest (nothing streams) while the tree scrolls the same way.
 * Opening is timed in the page (`performance.now()` at the first frame showing the whole tree,
 * from navigation); frames with `requestAnimationFrame`.
 * Not a test: nothing is asserted. `npx tsx bench/console.ts`.
 * BENCH_CONSOLE_AGENTS (1000), BENCH_CONSOLE_OPENS (5 of each, alternated), BENCH_CONSOLE_BUSY (300
 * agents prompted while frames are counted), BENCH_CONSOLE_EVENTS (5000 events streamed meanwhile).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium, openConsole } from "../test/support/browser.ts";
import {
  buildFleet,
  promptAll,
  settledRun,
  shownAt,
  startFrames,
  stopFrames,
  streamPosition,
} from "../test/support/console-fleet.ts";
import { type DaemonProcess, spawnDaemon } from "../test/support/daemon-process.ts";
import { until } from "../test/support/poll.ts";
import { env, fmtMs, fmtRatio, markdownTable, median, quantile } from "./stats.ts";

const AGENTS = env("BENCH_CONSOLE_AGENTS", 1000);
const OPENS = env("BENCH_CONSOLE_OPENS", 5);
const BUSY = env("BENCH_CONSOLE_BUSY", 300);
const EVENTS = env("BENCH_CONSOLE_EVENTS", 5000);
const OPEN_BUDGET_MS = 2_000;
const FRAME_P95_BUDGET_MS = 50;

type Daemon = DaemonProcess;

async function main(): Promise<void> {
  if (!haveChromium()) throw new Error("chromium is not installed (scripts/setup-machine.sh --tests installs it)");
  console.log(
    `# console benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-bench-console-"));
  const d = await spawnDaemon(dataDir, {
    SWARM_RUNTIME: "simulated",
    SWARM_HIBERNATE_AFTER_MS: "0",
    SWARM_LOG_LEVEL: "warn",
  });
  const browser = await launchChromium();
  try {
    const small = await buildFleet(d, 1);
    await promptAll(d, small.ids, "work");
    const fleet = await buildFleet(d, AGENTS);
    await promptAll(d, fleet.ids, "work");
    const asOf = await settledRun(d, fleet.runId);
    process.stderr.write(`a run of ${AGENTS} agents and ${asOf} events\n`);

    const opened = { big: [] as number[], small: [] as number[] };
    for (let i = 0; i < OPENS; i++) {
      opened.small.push(await openMs(browser, d, small.runId, 1, small.rootAgentId));
      opened.big.push(await openMs(browser, d, fleet.runId, AGENTS, fleet.rootAgentId));
    }
    const frames = await drawnFrames(browser, d, fleet);
    await settledRun(d, fleet.runId);
    if ((await d.call("DELETE", `/runs/${fleet.runId}`)).status !== 204) throw new Error("the run was not deleted");
    const ended: number[] = [];
    for (let i = 0; i < OPENS; i++) ended.push(await openMs(browser, d, fleet.runId, AGENTS, fleet.rootAgentId));

    const p95 = (samples: number[]) => quantile(samples, 0.95);
    const rows = [
      [
        `open a busy run of ${AGENTS} agents (p50 of ${OPENS})`,
        fmtMs(median(opened.big)),
        `a run of 1 agent: ${fmtMs(median(opened.small))}`,
        fmtRatio(median(opened.big), median(opened.small)),
        `${fmtMs(OPEN_BUDGET_MS)}: ${median(opened.big) < OPEN_BUDGET_MS ? "met" : "NOT met"}`,
      ],
      [
        "open it once ended (p50)",
        fmtMs(median(ended)),
        `a run of 1 agent: ${fmtMs(median(opened.small))}`,
        fmtRatio(median(ended), median(opened.small)),
        `${fmtMs(OPEN_BUDGET_MS)}: ${median(ended) < OPEN_BUDGET_MS ? "met" : "NOT met"}`,
      ],
      [
        `frame p95 while ${frames.streamed} events stream (${frames.busy.length} frames)`,
        fmtMs(p95(frames.busy)),
        `at rest: ${fmtMs(p95(frames.rest))} (${frames.rest.length} frames)`,
        fmtRatio(p95(frames.busy), p95(frames.rest)),
        `${fmtMs(FRAME_P95_BUDGET_MS)}: ${p95(frames.busy) < FRAME_P95_BUDGET_MS ? "met" : "NOT met"}`,
      ],
      [
        "frame median / max while streaming",
        `${fmtMs(median(frames.busy))} / ${fmtMs(Math.max(...frames.busy))}`,
        `at rest ${fmtMs(median(frames.rest))} / ${fmtMs(Math.max(...frames.rest))}`,
        "",
        "",
      ],
    ];
    console.log(`\n${markdownTable(["measure", "console", "baseline", "ratio", "budget"], rows)}`);
  } finally {
    await browser.close();
    await d.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One fresh page opening the run: ms from navigation to the first frame that shows its whole tree. */
async function openMs(
  browser: Browser,
  d: Daemon,
  runId: string,
  agents: number,
  rootAgentId: string,
): Promise<number> {
  const { page } = await openConsole(browser, `${d.url}/#/runs/${runId}`);
  try {
    return await shownAt(page, agents, rootAgentId);
  } finally {
    await page.context().close();
  }
}

/**
 * The page's frames while the tree scrolls: at rest for as long as the busy measure took (nothing
 * streams), and while BUSY agents work until EVENTS events reached the page.
 */
async function drawnFrames(
  browser: Browser,
  d: Daemon,
  fleet: { runId: string; rootAgentId: string; ids: string[] },
): Promise<{ rest: number[]; busy: number[]; streamed: number }> {
  const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${fleet.runId}`);
  try {
    await shownAt(page, fleet.ids.length, fleet.rootAgentId);
    const before = await streamPosition(page);
    const started = performance.now();
    await startFrames(page, true);
    await promptAll(d, fleet.ids.filter((_, i) => i % 3 === 0).slice(0, BUSY), "more");
    await until(
      async () => (await streamPosition(page)).received - before.received >= EVENTS,
      `${EVENTS} events streamed`,
      300_000,
    );
    const busy = await stopFrames(page);
    const streamed = (await streamPosition(page)).received - before.received;
    const busyMs = performance.now() - started;
    await settledRun(d, fleet.runId);
    await startFrames(page, true);
    await sleep(busyMs);
    const rest = await stopFrames(page);
    if (errors.length > 0) throw new Error(`the page reported errors: ${errors.join("; ")}`);
    return { rest, busy, streamed };
  } finally {
    await page.context().close();
  }
}

await main();
