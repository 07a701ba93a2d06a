import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { Json, Reply } from "./daemon.ts";
import { until } from "./poll.ts";

/**
 * A big run for the web console, shared by test/console/big-run.test.ts and bench/console.ts: 1,000
 * scripted agents in four levels (1 root, 10, 100, the rest), each turn five tool calls (about 36
 * persisted events), and what a page shows of it.
 */
export const FLEET_AGENTS = 1_000;
/** Children per agent. */
const FAN_OUT = 10;
const TURN = [
  ...Array.from({ length: 5 }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}` } })),
  { text: "done" },
];
/** Two turns' worth of script: the first prompt and one more. */
const WORK = [...TURN, ...TURN];

/** What these helpers need of a daemon: the in-process one (`startDaemon`) or a process (`spawnDaemon`). */
interface Caller {
  call(method: string, path: string, body?: unknown): Promise<Reply<Json>>;
}

export interface Fleet {
  runId: string;
  rootAgentId: string;
  /** Every agent, parents before their children, the root first. */
  ids: string[];
}

/** Spawns the fleet level by level (each agent's parent first), 50 requests at a time, and waits until all run. */
export async function buildFleet(d: Caller, agents = FLEET_AGENTS): Promise<Fleet> {
  const run = (
    await d.call("POST", "/runs", {
      spec: { name: "fleet", script: WORK, maxAgents: 100_000, spawnDepth: 8 },
      keepAlive: true,
    })
  ).body;
  const ids: string[] = [run.rootAgentId];
  while (ids.length < agents) {
    const batch = Array.from(
      { length: Math.min(50, agents - ids.length, ids.length * FAN_OUT - ids.length + 1) },
      (_, k) => ids.length + k,
    );
    const spawned = await Promise.all(
      batch.map(async (index) => {
        const answer = await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: ids[Math.floor((index - 1) / FAN_OUT)],
          spec: { name: `worker-${index}`, script: WORK },
          keepAlive: true,
        });
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
        return answer.body.agentId as string;
      }),
    );
    ids.push(...spawned);
  }
  await until(
    async () => (await d.call("GET", `/runs/${run.runId}`)).body.agents.every((a: Json) => a.state === "running"),
    `${agents} agents running`,
    300_000,
  );
  return { runId: run.runId, rootAgentId: run.rootAgentId, ids };
}

/** Prompts each of `agentIds`, 50 calls at a time. */
export async function promptAll(d: Caller, agentIds: readonly string[], text: string): Promise<void> {
  for (let i = 0; i < agentIds.length; i += 50)
    await Promise.all(
      agentIds.slice(i, i + 50).map(async (agentId) => {
        const answer = await d.call("POST", `/agents/${agentId}/prompt`, { text });
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
      }),
    );
}

/** Waits until the run's ledger stops growing for a second; its `asOf` then. */
export async function settledRun(d: Caller, runId: string): Promise<number> {
  let last = -1;
  await until(
    async () => {
      const asOf = (await d.call("GET", `/runs/${runId}`)).body.asOf as number;
      if (asOf === last) return true;
      last = asOf;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return false;
    },
    "the run's events to stop",
    300_000,
  );
  return last;
}

/** When the page shows the whole tree (`N agents`, the root's row), in ms since navigation (`performance.now()`). */
export async function shownAt(page: Page, total: number, rootAgentId: string): Promise<number> {
  const handle = await page.waitForFunction(
    ({ total, root }) => {
      // The page's DOM, typed here: the tests compile without the DOM's types.
      const { document } = globalThis as unknown as {
        document: { querySelector(selector: string): { textContent: string | null } | null };
      };
      return (
        document.querySelector('[data-testid="tree-count"]')?.textContent === `${total} agents` &&
        document.querySelector(`li[data-agent-id="${root}"]`) !== null &&
        performance.now()
      );
    },
    { total, root: rootAgentId },
    { polling: "raf", timeout: 120_000 },
  );
  return (await handle.jsonValue()) as number;
}

/** What the page says of its stream (`N events · last seq S`): events received, the newest seq. */
export async function streamPosition(page: Page): Promise<{ received: number; lastSeq: number }> {
  const text = (await page.getByTestId("stream-position").textContent()) ?? "";
  const [, received, lastSeq] = /^(\d+) events · last seq (\d+)/.exec(text) ?? [];
  return { received: Number(received ?? 0), lastSeq: Number(lastSeq ?? 0) };
}

/**
 * Starts counting the page's frames as the browser draws them (`requestAnimationFrame`), and
 * scrolls the tree 700 px every 100 ms meanwhile when `scroll`. A string: the functions tsx
 * compiles carry a helper the page does not have.
 */
export async function startFrames(page: Page, scroll: boolean): Promise<void> {
  await page.evaluate(`(() => {
    globalThis.swarmFrames = [];
    globalThis.swarmMeasuring = true;
    let last = performance.now();
    const frame = (now) => {
      globalThis.swarmFrames.push(now - last);
      last = now;
      if (globalThis.swarmMeasuring) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    const tree = document.querySelector('[data-testid="tree-scroll"]');
    const scroll = setInterval(() => {
      if (!globalThis.swarmMeasuring || !${scroll}) return clearInterval(scroll);
      tree.scrollTop = (tree.scrollTop + 700) % Math.max(1, tree.scrollHeight - tree.clientHeight);
    }, 100);
  })()`);
}

/** Stops the frame count: each frame's duration in ms (the first, partial one left out). */
export async function stopFrames(page: Page): Promise<number[]> {
  return (await page.evaluate("globalThis.swarmMeasuring = false, globalThis.swarmFrames.slice(1)")) as number[];
}

/** The agent ids of the tree's rows the page draws now (the tree draws only the rows in view). */
export async function rowsInView(page: Page): Promise<string[]> {
  return page
    .locator('[data-testid="tree-scroll"] li[data-agent-id]')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-agent-id") ?? ""));
}
