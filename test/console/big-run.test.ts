/**
 * The web console at 1,000 agents, in Chromium against a real daemon on the simulated runtime: a
 * run of 1,000 agents and tens of thousands of events shows its current tree within 2 s (the page
 * opens from the snapshot, not from seq 1), live and once ended; and while events stream, the page
 * draws its frames at p95 under 50 ms, measured with the browser's own clock (requestAnimationFrame).
 * The two budgets are the issue's; they are the only timed assertions of the console's tests.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { haveChromium, launchChromium, openConsole } from "../support/browser.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { until } from "../support/poll.ts";

const SKIP =
  haveChromium() || process.env.CI === "true"
    ? false
    : "chromium is not installed (make test installs it as root: scripts/setup-machine.sh --tests)";

const AGENTS = 1_000;
/** Children per agent: 1 root, 10, 100, then the rest under the third level. */
const FAN_OUT = 10;
const OPEN_BUDGET_MS = 2_000;
const FRAME_P95_BUDGET_MS = 50;
/** A turn of five tool calls (about 36 persisted events), for each of two turns. */
const TURN = [
  ...Array.from({ length: 5 }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}` } })),
  { text: "done" },
];
const WORK = [...TURN, ...TURN];

/** When the page shows the whole tree (`1000 agents`, the root's row), in ms since navigation (`performance.now()`). */
async function shownAt(page: Page, rootAgentId: string): Promise<number> {
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
    { total: AGENTS, root: rootAgentId },
    { polling: "raf", timeout: 120_000 },
  );
  return (await handle.jsonValue()) as number;
}

describe("the web console with 1,000 agents", { skip: SKIP }, () => {
  let d: Daemon;
  let browser: Browser;
  let run: Json;
  const ids: string[] = [];

  /** Prompts `agentIds`, 50 calls at a time. */
  const prompt = async (agentIds: readonly string[], text: string) => {
    for (let i = 0; i < agentIds.length; i += 50)
      await Promise.all(
        agentIds.slice(i, i + 50).map(async (agentId) => {
          const answer = await d.call("POST", `/agents/${agentId}/prompt`, { text });
          assert.equal(answer.status, 202, JSON.stringify(answer.body));
        }),
      );
  };
  /** Waits until the run's ledger stops growing for a second. */
  const settled = async () => {
    let last = -1;
    await until(
      async () => {
        const asOf = (await d.call("GET", `/runs/${run.runId}`)).body.asOf as number;
        if (asOf === last) return true;
        last = asOf;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return false;
      },
      "the run's events to stop",
      300_000,
    );
    return last;
  };

  before(async () => {
    d = await startDaemon();
    browser = await launchChromium();
    run = (
      await d.call("POST", "/runs", {
        spec: { name: "fleet", script: WORK, maxAgents: 100_000, spawnDepth: 8 },
        keepAlive: true,
      })
    ).body;
    ids.push(run.rootAgentId);
    // Level by level: each agent's parent is spawned before it.
    while (ids.length < AGENTS) {
      const batch = Array.from(
        { length: Math.min(50, AGENTS - ids.length, ids.length * FAN_OUT - ids.length + 1) },
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
      "1,000 agents running",
      300_000,
    );
    await prompt(ids, "work");
    await settled();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it("shows a busy run's current tree within 2 s of opening it, tens of thousands of events in", async (t) => {
    const snapshot = (await d.call("GET", `/runs/${run.runId}`)).body;
    assert.equal(snapshot.agents.length, AGENTS);
    assert.ok(snapshot.asOf > 30_000, `a run of ${snapshot.asOf} events`);
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      const ms = await shownAt(page, run.rootAgentId);
      assert.ok(ms < OPEN_BUDGET_MS, `the tree of ${AGENTS} agents and ${snapshot.asOf} events shown after ${ms} ms`);
      t.diagnostic(`opened a run of ${AGENTS} agents and ${snapshot.asOf} events in ${ms.toFixed(0)} ms`);
      // Current: what the daemon has, every agent in its state (a filter finds the last one).
      await page.getByLabel("Filter by state").selectOption("running");
      assert.equal(await page.getByTestId("tree-count").innerText(), `${AGENTS} of ${AGENTS} agents match`);
      await page.getByLabel("Filter by state").selectOption("");
      await page.getByLabel("Search agents").fill(`worker-${AGENTS - 1}`);
      assert.equal(
        await page.locator(`li[data-agent-id="${ids.at(-1)}"]`).getAttribute("data-state"),
        "running",
        "the last agent, found by name",
      );
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("draws frames at p95 under 50 ms while events stream and the tree scrolls", async (t) => {
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      await shownAt(page, run.rootAgentId);
      const receivedBefore = await received(page);
      // Frames as the browser draws them, and the tree scrolled a little every 100 ms. A string:
      // the functions tsx compiles carry a helper the page does not have.
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
          if (!globalThis.swarmMeasuring) return clearInterval(scroll);
          tree.scrollTop = (tree.scrollTop + 700) % Math.max(1, tree.scrollHeight - tree.clientHeight);
        }, 100);
      })()`);
      // Work while the page measures: 300 agents prompted again, each turn ~36 events.
      const busy = ids.filter((_, i) => i % 3 === 0).slice(0, 300);
      await prompt(busy, "more");
      await until(async () => (await received(page)) - receivedBefore > 5_000, "5,000 events streamed", 120_000);
      const frames = (await page.evaluate(
        "globalThis.swarmMeasuring = false, globalThis.swarmFrames.slice(1)",
      )) as number[];
      const sorted = [...frames].sort((a, b) => a - b);
      const p95 = sorted[Math.floor(sorted.length * 0.95)] ?? Number.POSITIVE_INFINITY;
      assert.ok(frames.length > 50, `${frames.length} frames measured`);
      t.diagnostic(
        `frames while ${(await received(page)) - receivedBefore} events streamed: p95 ${p95.toFixed(1)} ms, median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, ${frames.length} frames`,
      );
      assert.ok(
        p95 < FRAME_P95_BUDGET_MS,
        `p95 frame ${p95.toFixed(1)} ms over ${frames.length} frames (median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms)`,
      );
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
    await settled();
  });

  it("shows the run once ended within 2 s too, its badge saying so, and its timeline with one bar per agent", async () => {
    assert.equal((await d.call("DELETE", `/runs/${run.runId}`)).status, 204);
    const snapshot = (await d.call("GET", `/runs/${run.runId}`)).body;
    assert.ok(snapshot.agents.every((a: Json) => a.state === "aborted"));
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      const ms = await shownAt(page, run.rootAgentId);
      assert.ok(ms < OPEN_BUDGET_MS, `the ended tree of ${snapshot.asOf} events shown after ${ms} ms`);
      await page.getByRole("status").getByText("ended", { exact: true }).waitFor();
      await page.getByRole("tab", { name: "Timeline" }).click();
      const bar = page.locator(`.timeline-row[data-agent-id="${run.rootAgentId}"] .span`);
      await bar.first().waitFor({ timeout: 60_000 });
      const activities = await bar.evaluateAll((spans) => spans.map((s) => s.getAttribute("data-activity")));
      assert.deepEqual(
        [...new Set(activities)].sort(),
        ["idle", "provisioning", "turn"],
        "the root provisioned, idled, ran turns",
      );
      assert.ok((await page.locator(".timeline-row").count()) >= 20, "the bars in view are drawn");
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });
});

/** The page's count of events received (`N events · last seq S`). */
async function received(page: Page): Promise<number> {
  return Number(/^(\d+) events/.exec(await page.getByTestId("stream-position").innerText())?.[1] ?? 0);
}
