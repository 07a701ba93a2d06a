/**
 * The pictures of the web console in docs/console.md: `npx tsx scripts/console-screenshots.ts`
 * starts a daemon of its own (simulated sandboxes, a temporary data folder, scripted models), sets
 * up a small swarm in the states worth showing and a tree of 200 agents, and saves
 * docs/console-runs.png, console-run.png, console-actions.png, console-timeline.png and
 * console-big-tree.png from Debian's Chromium. Nothing leaves loopback.
 */
import type { Page } from "playwright-core";
import { launchChromium, openConsole } from "../test/support/browser.ts";
import { startDaemon, waitForState } from "../test/support/daemon.ts";

const d = await startDaemon();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
try {
  const spawn = async (
    runId: string,
    parentAgentId: string,
    name: string,
    script: unknown[],
    prompt?: string,
    extra: object = {},
  ) =>
    (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId,
        spec: { name, script, ...extra },
        keepAlive: true,
        ...(prompt ? { prompt } : {}),
      })
    ).body.agentId as string;

  const done = (
    await d.call("POST", "/runs", { spec: { name: "lint-fixer", script: [] }, prompt: "fix the lint warnings" })
  ).body;
  await d.call("GET", `/agents/${done.rootAgentId}/result?wait=60`);

  // A small swarm: a planner and its team, one agent waiting for approval, one paused, one drained.
  const run = (
    await d.call("POST", "/runs", {
      spec: { name: "planner", script: [{ text: "Split the work: a coder, a tester and a reviewer." }] },
      keepAlive: true,
      prompt: "Add a --json flag to the CLI, with tests.",
    })
  ).body;
  await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`);
  const coder = await spawn(run.runId, run.rootAgentId, "coder", [
    { tool: "bash", args: { command: "echo 'src/cli/main.ts:12: parseArgs({ options })'" } },
    { text: "The flags are parsed in src/cli/main.ts; adding --json there and in the table printer.", delayMs: 3_000 },
  ]);
  const tester = await spawn(
    run.runId,
    run.rootAgentId,
    "tester",
    [{ text: "Writing the tests for --json now, starting with the table output.", delayMs: 600_000 }],
    "Write tests for --json.",
  );
  const reviewer = await spawn(
    run.runId,
    run.rootAgentId,
    "reviewer",
    [{ tool: "bash", args: { command: "git push origin json-flag" } }],
    "Review and push the branch.",
    { approve: [{ tool: "bash", match: "git push" }] },
  );
  const docs = await spawn(run.runId, coder, "docs-writer", [], "Document --json in the README.");
  for (const agentId of [coder, tester, reviewer, docs]) await waitForState(d, agentId, "running");
  await d.call("GET", `/agents/${docs}/result?wait=60`);
  await d.call("POST", `/agents/${docs}/stop`, { mode: "drain" });
  await pause(1_500);

  // A bigger tree: 200 agents under 10 leads, some done, some paused.
  const fleet = (
    await d.call("POST", "/runs", {
      spec: { name: "migration", script: [], maxAgents: 1_000, spawnDepth: 4 },
      keepAlive: true,
      prompt: "Port every package to the new logger.",
    })
  ).body;
  const leads: string[] = [];
  for (let i = 0; i < 10; i++)
    leads.push(await spawn(fleet.runId, fleet.rootAgentId, `lead-${i}`, [], `Port group ${i}.`));
  const workers: string[] = [];
  for (let i = 0; i < 190; i++) {
    const lead = leads[i % 10] as string;
    const finish = i % 3 === 0;
    const answer = await d.call("POST", `/runs/${fleet.runId}/agents`, {
      parentAgentId: lead,
      spec: { name: `pkg-${String(i).padStart(3, "0")}`, script: [] },
      prompt: `Port package ${i}.`,
      keepAlive: !finish,
    });
    workers.push(answer.body.agentId);
  }
  await waitForState(d, workers[188] as string, "running");
  await d.call("POST", `/agents/${leads[3]}/pause`, { scope: "subtree" });
  await pause(2_000);

  const browser = await launchChromium();
  const shot = async (page: Page, name: string, clip?: { x: number; y: number; width: number; height: number }) => {
    await pause(600);
    await page.screenshot({ path: `docs/${name}`, ...(clip ? { clip } : {}) });
  };
  try {
    const { page } = await openConsole(browser, `${d.url}/`);
    await page.locator(`tr[data-run-id="${run.runId}"]`).waitFor();
    await shot(page, "console-runs.png", { x: 0, y: 0, width: 1400, height: 300 });

    // The coder's turn starts once its panel is open: its live output shows from then on.
    await page.goto(`${d.url}/#/runs/${run.runId}/${coder}`);
    await page.locator(`li[data-agent-id="${reviewer}"] .approval`).waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="machine-value"]').waitFor();
    await d.call("POST", `/agents/${coder}/prompt`, { text: "Implement --json in src/cli." });
    await page.locator(`li[data-agent-id="${tester}"] .activity`).waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="live-output"] .out-text').getByText("table printer").waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="session-stats"]').waitFor({ timeout: 30_000 });
    await shot(page, "console-run.png");

    const testerRow = page.locator(`li[data-agent-id="${tester}"]`);
    await testerRow.getByRole("button", { name: "Actions" }).click();
    await testerRow.getByRole("button", { name: "Subtree", exact: true }).click();
    await testerRow.getByRole("button", { name: "Stop", exact: true }).click();
    const box = await page.locator('[data-testid="tree-scroll"]').boundingBox();
    if (box) await shot(page, "console-actions.png", { x: box.x, y: box.y, width: box.width, height: 330 });
    await testerRow.getByRole("button", { name: "Cancel" }).click();

    await d.call("POST", `/agents/${tester}/pause`, {});
    await page.getByRole("tab", { name: "Timeline" }).click();
    await page.locator(".timeline-row .span").first().waitFor();
    await pause(2_000);
    await shot(page, "console-timeline.png");

    await page.goto(`${d.url}/#/runs/${fleet.runId}`);
    await page.getByTestId("tree-count").getByText("201 agents").waitFor();
    for (const lead of [leads[0], leads[1], leads[2], leads[4]])
      await page.locator(`li[data-agent-id="${lead}"]`).getByRole("button", { name: "Collapse" }).click();
    await page.getByTestId("tree-scroll").evaluate((tree) => (tree.scrollTop = 0));
    await shot(page, "console-big-tree.png", { x: 0, y: 0, width: 1400, height: 900 });
  } finally {
    await browser.close();
  }
  console.log(
    "saved docs/console-runs.png, console-run.png, console-actions.png, console-timeline.png and console-big-tree.png",
  );
} finally {
  await d.stop();
}
