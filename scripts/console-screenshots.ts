/**
 * The README's pictures of the web console: `npx tsx scripts/console-screenshots.ts` starts a daemon
 * of its own (process sandboxes, a temporary data folder, scripted models), sets up a small swarm in
 * the states worth showing, and saves docs/console-runs.png and docs/console-run.png from Debian's
 * Chromium. Nothing leaves loopback.
 */
import { launchChromium, openConsole } from "../test/support/browser.ts";
import { startDaemon, waitForState } from "../test/support/daemon.ts";

const d = await startDaemon();
try {
  const spawn = async (
    runId: string,
    parentAgentId: string,
    name: string,
    script: unknown[],
    prompt: string,
    extra: object = {},
  ) =>
    (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId,
        spec: { name, script, ...extra },
        keepAlive: true,
        prompt,
      })
    ).body.agentId as string;

  const done = (
    await d.call("POST", "/runs", { spec: { name: "lint-fixer", script: [] }, prompt: "fix the lint warnings" })
  ).body;
  await d.call("GET", `/agents/${done.rootAgentId}/result?wait=60`);

  const run = (
    await d.call("POST", "/runs", {
      spec: { name: "planner", script: [{ text: "Split the work: a coder, a tester and a reviewer." }] },
      keepAlive: true,
      prompt: "Add a --json flag to the CLI, with tests.",
    })
  ).body;
  await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`);
  const coder = await spawn(
    run.runId,
    run.rootAgentId,
    "coder",
    [{ tool: "bash", args: { command: "sleep 600" } }],
    "Implement --json in src/cli.",
  );
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
  await new Promise((resolve) => setTimeout(resolve, 1500));

  const browser = await launchChromium();
  try {
    const { page } = await openConsole(browser, `${d.url}/`);
    await page.locator(`tr[data-run-id="${run.runId}"]`).waitFor();
    await page.screenshot({ path: "docs/console-runs.png", clip: { x: 0, y: 0, width: 1400, height: 260 } });
    await page.goto(`${d.url}/#/runs/${run.runId}/${coder}`);
    await page.locator(`li[data-agent-id="${reviewer}"] .approval`).waitFor({ timeout: 60_000 });
    await page.locator(`li[data-agent-id="${tester}"] .activity`).waitFor({ timeout: 60_000 });
    await page.locator(`li[data-agent-id="${tester}"]`).getByRole("button", { name: "Pause", exact: true }).click();
    await page.locator(`li[data-agent-id="${tester}"]`).getByText("paused by operator").waitFor();
    await page.locator('[data-testid="machine-value"]').waitFor();
    await page.screenshot({ path: "docs/console-run.png" });
  } finally {
    await browser.close();
  }
  console.log("saved docs/console-runs.png and docs/console-run.png");
} finally {
  await d.stop();
}
