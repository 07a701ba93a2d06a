/**
 * The web console at 1,000 agents, in Chromium against a real daemon on the simulated runtime: a
 * run of 1,000 agents and tens of thousands of events opens from its snapshot (the page does not
 * fold the stream from seq 1) and shows its current tree, live and once ended; while events stream
 * and the tree scrolls the page keeps drawing, shows other rows, and ends level with the run.
 * How fast it opens and draws (the 2 s and 50 ms p95 budgets) is bench/console.ts's to measure,
 * never a timed assertion here.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import { LOG_BACKFILL } from "../../src/console/run-state.ts";
import { haveChromium, launchChromium, openConsole } from "../support/browser.ts";
import {
  buildFleet,
  FLEET_AGENTS,
  type Fleet,
  promptAll,
  rowsInView,
  settledRun,
  shownAt,
  startFrames,
  stopFrames,
  streamPosition,
} from "../support/console-fleet.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { until } from "../support/poll.ts";

const SKIP =
  haveChromium() || process.env.CI === "true"
    ? false
    : "chromium is not installed (make test installs it as root: scripts/setup-machine.sh --tests)";

describe("the web console with 1,000 agents", { skip: SKIP }, () => {
  let d: Daemon;
  let browser: Browser;
  let fleet: Fleet;

  before(async () => {
    d = await startDaemon();
    browser = await launchChromium();
    fleet = await buildFleet(d);
    await promptAll(d, fleet.ids, "work");
    await settledRun(d, fleet.runId);
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it("opens a busy run of tens of thousands of events from its snapshot and shows its current tree", async () => {
    const snapshot = (await d.call("GET", `/runs/${fleet.runId}`)).body;
    assert.equal(snapshot.agents.length, FLEET_AGENTS);
    assert.ok(snapshot.asOf > 30_000, `a run of ${snapshot.asOf} events`);
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${fleet.runId}`);
    try {
      await shownAt(page, FLEET_AGENTS, fleet.rootAgentId);
      // From the snapshot: the log's backfill only, level with the run; folding from seq 1 would receive them all.
      await until(async () => (await streamPosition(page)).lastSeq === snapshot.asOf, "the page level with the run");
      const { received } = await streamPosition(page);
      assert.ok(received <= LOG_BACKFILL, `${received} events received of ${snapshot.asOf}`);
      // Current: what the daemon has, every agent in its state (a filter finds the last one).
      await page.getByLabel("Filter by state").selectOption("running");
      assert.equal(await page.getByTestId("tree-count").innerText(), `${FLEET_AGENTS} of ${FLEET_AGENTS} agents match`);
      await page.getByLabel("Filter by state").selectOption("");
      await page.getByLabel("Search agents").fill(`worker-${FLEET_AGENTS - 1}`);
      assert.equal(
        await page.locator(`li[data-agent-id="${fleet.ids.at(-1)}"]`).getAttribute("data-state"),
        "running",
        "the last agent, found by name",
      );
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("keeps drawing while events stream and the tree scrolls, and ends level with the run", async (t) => {
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${fleet.runId}`);
    try {
      await shownAt(page, FLEET_AGENTS, fleet.rootAgentId);
      const before = await streamPosition(page);
      const firstRows = await rowsInView(page);
      await startFrames(page, true);
      // Work while the page draws: 300 agents prompted again, each turn ~36 events.
      await promptAll(d, fleet.ids.filter((_, i) => i % 3 === 0).slice(0, 300), "more");
      await until(
        async () => (await streamPosition(page)).received - before.received > 5_000,
        "5,000 events streamed",
        120_000,
      );
      const frames = await stopFrames(page);
      const sorted = [...frames].sort((a, b) => a - b);
      t.diagnostic(
        `${frames.length} frames drawn while events streamed: median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms (bench/console.ts measures them)`,
      );
      assert.ok(frames.length > 50, `${frames.length} frames drawn while 5,000 events streamed`);
      assert.notDeepEqual(await rowsInView(page), firstRows, "the scrolled tree draws other rows");
      // Nothing lost while it drew: once the run is quiet the page has its last event.
      const asOf = await settledRun(d, fleet.runId);
      await until(async () => (await streamPosition(page)).lastSeq === asOf, `the page at seq ${asOf}`, 60_000);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("shows the run once ended, its badge saying so, and its timeline with one bar per agent", async () => {
    assert.equal((await d.call("DELETE", `/runs/${fleet.runId}`)).status, 204);
    const snapshot = (await d.call("GET", `/runs/${fleet.runId}`)).body;
    assert.ok(snapshot.agents.every((a: Json) => a.state === "aborted"));
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${fleet.runId}`);
    try {
      await shownAt(page, FLEET_AGENTS, fleet.rootAgentId);
      await page.getByRole("status").getByText("ended", { exact: true }).waitFor();
      await until(async () => (await streamPosition(page)).lastSeq === snapshot.asOf, "the page level with the run");
      assert.ok((await streamPosition(page)).received <= LOG_BACKFILL, "opened from the snapshot");
      await page.getByRole("tab", { name: "Timeline" }).click();
      const bar = page.locator(`.timeline-row[data-agent-id="${fleet.rootAgentId}"] .span`);
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
