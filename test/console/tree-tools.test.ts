/**
 * The console's tools for big trees, in Chromium against a real daemon (simulated runtime):
 * collapsing a subtree (its row then says what it hides, by state, and the subtree's spend),
 * search and filters by state and outcome, the timeline (one bar per agent, coloured by what it did,
 * zoomable), the open agent's live output, its session stats and machine as tables, and the badge
 * of a run that ended.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { spawnAgent } from "../support/agent-view.ts";
import { haveChromium, launchChromium, openConsole } from "../support/browser.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { until } from "../support/poll.ts";

const SKIP =
  haveChromium() || process.env.CI === "true"
    ? false
    : "chromium is not installed (make test installs it as root: scripts/setup-machine.sh --tests)";
const row = (page: Page, agentId: string) => page.locator(`li[data-agent-id="${agentId}"]`);
const shownIds = (page: Page) =>
  page.locator("li[data-agent-id]").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-agent-id")));

describe("the console's tree tools in Chromium", { skip: SKIP }, () => {
  let d: Daemon;
  let browser: Browser;
  /** root → lead (→ done-kid, live-kid), solo: one run for the tree tests. */
  let run: Json;
  let lead: string;
  let doneKid: string;
  let liveKid: string;
  let solo: string;

  const spawn = (parentAgentId: string, name: string, extra: Json = {}) =>
    spawnAgent(d.call, run.runId, parentAgentId, name, extra);

  before(async () => {
    d = await startDaemon();
    browser = await launchChromium();
    run = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true, prompt: "hello" }))
      .body;
    await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`);
    lead = await spawn(run.rootAgentId, "lead", { prompt: "lead the way" });
    await d.call("GET", `/agents/${lead}/result?wait=60`);
    doneKid = await spawn(lead, "done-kid", { prompt: "finish", keepAlive: false });
    liveKid = await spawn(lead, "live-kid");
    solo = await spawn(run.rootAgentId, "solo");
    await waitForState(d, doneKid, "done");
    for (const agentId of [liveKid, solo]) await waitForState(d, agentId, "running");
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it("collapses a subtree into one row that counts its agents by state and shows its spend, and expands it again", async () => {
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      await row(page, solo).waitFor();
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, doneKid, liveKid, solo]);
      const leadSubtree = (await d.call("GET", `/agents/${lead}`)).body.subtreeUsage;
      assert.ok(leadSubtree.calls >= 2, "lead and done-kid called the model");

      await row(page, lead).getByRole("button", { name: "Collapse", exact: true }).click();
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, solo], "its subtree folded away");
      assert.equal(await row(page, lead).getByTestId("collapsed-counts").innerText(), "2 below: running 1 · done 1");
      assert.match(
        await row(page, lead).getByTestId("spend").innerText(),
        new RegExp(`subtree .*\\$${leadSubtree.costUsd.toFixed(4).replace(".", "\\.")}`),
        "the subtree's spend on the row",
      );
      await row(page, lead).getByRole("button", { name: "Expand", exact: true }).click();
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, doneKid, liveKid, solo]);

      await page.getByRole("button", { name: "Collapse all" }).click();
      assert.deepEqual(await shownIds(page), [run.rootAgentId]);
      assert.equal(
        await row(page, run.rootAgentId).getByTestId("collapsed-counts").innerText(),
        "4 below: running 3 · done 1",
      );
      await page.getByRole("button", { name: "Expand all" }).click();
      assert.equal((await shownIds(page)).length, 5);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("finds agents by name, state and outcome, with their ancestors shown as context", async () => {
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      await row(page, solo).waitFor();
      await page.getByLabel("Search agents").fill("KID");
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, doneKid, liveKid]);
      assert.equal(await page.getByTestId("tree-count").innerText(), "2 of 5 agents match");
      assert.deepEqual(
        await page
          .locator("li.agent-row.context")
          .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-agent-id"))),
        [run.rootAgentId, lead],
        "the ancestors are context, dimmed",
      );
      await page.getByLabel("Filter by state").selectOption("done");
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, doneKid]);
      await page.getByLabel("Search agents").fill("");
      await page.getByLabel("Filter by state").selectOption("");
      await page.getByLabel("Filter by outcome").selectOption("success");
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, doneKid]);
      await page.getByLabel("Filter by outcome").selectOption("aborted");
      assert.deepEqual(await shownIds(page), []);
      await page.getByText("No agent matches the filter.").waitFor();
      await page.getByLabel("Filter by outcome").selectOption("");
      await page.getByLabel("Filter by state").selectOption("running");
      assert.deepEqual(await shownIds(page), [run.rootAgentId, lead, liveKid, solo]);
      assert.equal(await page.getByTestId("tree-count").innerText(), "4 of 5 agents match");
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("draws the timeline: a bar per agent coloured by what it did (paused, waiting for approval), zoomable", async () => {
    // Something to see: solo paused a while, an asker waiting for a decision.
    assert.equal((await d.call("POST", `/agents/${solo}/pause`, {})).status, 202);
    await waitForState(d, solo, "paused");
    const asker = await spawn(run.rootAgentId, "asker", {
      spec: { name: "asker", script: [{ tool: "bash", args: { command: "echo asked" } }], approve: [{ tool: "bash" }] },
      prompt: "ask",
    });
    await until(
      async () => (await d.call("GET", `/agents/${asker}`)).body.pendingPermissions.length === 1,
      "the asker waiting for a decision",
      60_000,
    );
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      await row(page, asker).waitFor();
      await page.getByRole("tab", { name: "Timeline" }).click();
      const bar = (agentId: string) => page.locator(`.timeline-row[data-agent-id="${agentId}"] .span`);
      await bar(asker).first().waitFor();
      assert.equal(await page.locator(".timeline-row").count(), 6, "one bar per agent");
      const activities = async (agentId: string) =>
        bar(agentId).evaluateAll((spans) => spans.map((s) => s.getAttribute("data-activity")));
      assert.deepEqual(await activities(solo), ["provisioning", "idle", "paused"]);
      assert.equal((await activities(asker)).at(-1), "approval", "waiting for approval, now");
      assert.deepEqual(
        (await activities(doneKid)).filter((activity) => activity !== "idle"),
        ["provisioning", "turn"],
        "made, then its turn (idle between, a moment), then ended",
      );
      // Kept current from the stream: a resume opens a new stretch.
      assert.equal((await d.call("POST", `/agents/${solo}/resume`, {})).status, 202);
      await until(async () => (await activities(solo)).at(-1) === "idle", "solo idle again on the timeline");

      const window = async () => await page.getByTestId("timeline-window").innerText();
      const seconds = (text: string) => {
        const [, n, unit] = /\(([\d.]+) (ms|s|min)/.exec(text) ?? [];
        return Number(n) * (unit === "ms" ? 0.001 : unit === "min" ? 60 : 1);
      };
      // The run's window grows with the clock while it lives: stop that before comparing widths.
      await page.getByRole("button", { name: "Zoom in" }).click();
      const zoomed = seconds(await window());
      await page.getByRole("button", { name: "Zoom in" }).click();
      assert.ok(Math.abs(seconds(await window()) - zoomed / 2) <= zoomed * 0.05, "twice as close");
      await page.getByRole("button", { name: "Zoom out" }).click();
      assert.ok(Math.abs(seconds(await window()) - zoomed) <= zoomed * 0.05, "back");
      await page.getByRole("button", { name: "Fit" }).click();
      assert.ok(seconds(await window()) >= zoomed * 1.9, "the whole run again");
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
      const request = (await d.call("GET", `/agents/${asker}`)).body.pendingPermissions[0];
      await d.call("POST", `/agents/${asker}/permissions/${request}`, { decision: "allow" });
    }
  });

  it("shows the open agent's live output, its session stats as tables and its machine as a path", async () => {
    const worker = await spawn(run.rootAgentId, "worker", {
      spec: {
        name: "worker",
        script: [
          { tool: "bash", args: { command: "echo first-output" } },
          { text: "Working on it, slowly and in pieces.", delayMs: 1_500 },
        ],
      },
    });
    await waitForState(d, worker, "running");
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}/${worker}`);
    try {
      const panel = page.locator(`[data-panel-agent-id="${worker}"]`);
      await panel.getByText("Nothing yet").waitFor();
      assert.equal((await d.call("POST", `/agents/${worker}/prompt`, { text: "go" })).status, 202);
      const output = panel.getByTestId("live-output");
      await output.locator(".out-tool").getByText("bash").waitFor({ timeout: 30_000 });
      await until(
        async () =>
          /first-output/.test(
            await output
              .locator(".out-tool pre")
              .innerText()
              .catch(() => ""),
          ),
        "the tool's output under its call",
        30_000,
      );
      await until(
        async () =>
          (await output
            .locator(".out-text pre")
            .innerText()
            .catch(() => "")) === "Working on it, slowly and in pieces.",
        "the streamed text, whole",
        30_000,
      );
      await output.getByText("turn settled: success").waitFor({ timeout: 30_000 });

      const stats = panel.getByTestId("session-stats");
      await stats.waitFor({ timeout: 30_000 });
      const tokens = await stats.getByRole("table", { name: "Tokens" }).locator("tr").allInnerTexts();
      assert.deepEqual(
        tokens.map((line) => line.split("\t")[0]),
        ["input", "output", "cache read", "cache write", "total"],
      );
      assert.ok(
        tokens.every((line) => /^[a-z ]+\t[\d.]+k?$/.test(line)),
        `numbers, rounded: ${tokens.join(" | ")}`,
      );
      assert.doesNotMatch(await stats.innerText(), /[{}]/, "no raw JSON");
      assert.match(await panel.getByTestId("machine-value").innerText(), /^live\.[a-z.]+$/);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it("says so when every agent of the run ended", async () => {
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${run.runId}`);
    try {
      await page.getByRole("status").getByText("live", { exact: true }).waitFor();
      assert.equal((await d.call("DELETE", `/runs/${run.runId}`)).status, 204);
      await page.getByRole("status").getByText("ended", { exact: true }).waitFor({ timeout: 30_000 });
      assert.deepEqual(
        await row(page, solo).locator(".badge").allInnerTexts(),
        ["aborted"],
        "one badge for an ended agent",
      );
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });
});
