/**
 * Forks in the web console, in a real browser (Debian's Chromium through playwright-core) against a
 * real daemon on the simulated runtime: Fork makes children of an agent between turns (and is
 * disabled while it is in a turn), the tree marks them, a child's panel says where it was forked
 * from and shows its changes with their diffs as text, Adopt applies them to the parent (checked
 * through the parent's own bash), and a conflict is said and settled with "Adopt, theirs win".
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { haveChromium, launchChromium, openConsole } from "../support/browser.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { pollUntil, until } from "../support/poll.ts";

const SKIP =
  haveChromium() || process.env.CI === "true"
    ? false
    : "chromium is not installed (make test installs it as root: scripts/setup-machine.sh --tests)";

/**
 * The first step of every script here. The forked agent's first turn writes notes.txt; a fork
 * child runs its parent's script from its start on the copied /work, so the same step there
 * changes notes.txt and adds a file, an HTML page (shown as text, never run) and a binary file.
 */
const SETUP = {
  tool: "bash",
  args: {
    command: [
      "if [ -f /work/notes.txt ]; then",
      "printf 'one\\nTWO\\nthree\\nfour\\n' > /work/notes.txt;",
      "echo fresh > /work/added.txt;",
      "printf '<b>bold</b><script>window.pwned = 1</script>\\n' > /work/page.html;",
      "printf 'a\\000b' > /work/blob.bin;",
      "else printf 'one\\ntwo\\nthree\\n' > /work/notes.txt; fi",
    ].join(" "),
  },
};
/** What the parent runs to show its files: the test's way to see them from outside. */
const SHOW = [
  { tool: "bash", args: { command: "cat /work/notes.txt /work/added.txt" } },
  { text: "parent sees: {{lastToolResult}}" },
];
/** notes.txt and added.txt as the child left them. */
const ADOPTED = "parent sees: one\nTWO\nthree\nfour\nfresh\n";

const row = (page: Page, agentId: string) => page.locator(`li[data-agent-id="${agentId}"]`);
const panel = (page: Page, agentId: string) => page.locator(`[data-panel-agent-id="${agentId}"]`);
/** A control of the agent's row, its Actions menu opened first. */
async function button(page: Page, agentId: string, name: string) {
  const actions = row(page, agentId).getByRole("button", { name: "Actions", exact: true });
  if ((await actions.getAttribute("aria-expanded")) !== "true") await actions.click();
  return row(page, agentId).getByRole("button", { name, exact: true });
}
/** An element's computed background colour, read in the page (the tests' types have no DOM). */
const background = (element: unknown): string =>
  (globalThis as unknown as { getComputedStyle(element: unknown): { backgroundColor: string } }).getComputedStyle(
    element,
  ).backgroundColor;
/** What the page logged as an error, less the failed loads a refused call is (the tests assert those). */
const unexpected = (errors: string[]) =>
  errors.filter((e) => !/Failed to load resource: the server responded with a status of (400|409)/.test(e));

describe("forks in the web console", { skip: SKIP }, () => {
  let d: Daemon;
  let browser: Browser;
  before(async () => {
    // The simulated runtime whatever SWARM_E2E_RUNTIME says: the only one that forks so far.
    d = await startDaemon({ runtime: () => createMemoryRuntime() });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  /** A root kept alive after its first turn (SETUP), idle: what the tests fork. */
  async function idleRoot(script: Json[]) {
    const created = await d.call("POST", "/runs", {
      spec: { name: "root", script: [SETUP, { text: "ready" }, ...script] },
      keepAlive: true,
      prompt: "set up",
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId } = created.body;
    assert.equal((await d.call("GET", `/agents/${rootAgentId}/result?wait=60`)).body.result, "ready");
    return { runId: runId as string, root: rootAgentId as string };
  }
  /** Prompts the agent and waits for the result its turn settles with (the newest result starting with `prefix`). */
  async function turn(agentId: string, text: string, prefix: string): Promise<string> {
    assert.equal((await d.call("POST", `/agents/${agentId}/prompt`, { text })).status, 202);
    const settled = await pollUntil(
      async () => (await d.call("GET", `/agents/${agentId}/result`)).body,
      (r) => typeof r.result === "string" && r.result.startsWith(prefix),
      `${agentId}'s turn "${text}" to settle`,
    );
    return settled.result;
  }

  it("Fork makes two children marked as forks; a child's Changes shows its diff; Adopt puts its files in the parent", async () => {
    const { runId, root } = await idleRoot(SHOW);
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${runId}`);
    await row(page, root).waitFor();
    assert.equal(await row(page, root).getByTestId("fork-badge").count(), 0, "the root is no fork");

    const fork = await button(page, root, "Fork");
    assert.equal(await fork.isEnabled(), true, "an idle agent can be forked");
    await fork.click();
    await row(page, root)
      .getByRole("textbox", { name: /Prompts, one per line/ })
      .fill("try A\n\ntry B\n");
    assert.equal(await row(page, root).getByTestId("fork-count").innerText(), "2 children", "blank lines left out");
    await row(page, root).getByRole("button", { name: "Send", exact: true }).click();
    const made = row(page, root).getByRole("status", { name: "Fork results" });
    await made.waitFor();
    const children = await made.locator("a").allInnerTexts();
    assert.equal(children.length, 2, await made.innerText());
    const [a, b] = children as [string, string];
    assert.deepEqual(
      await Promise.all(children.map(async (id) => (await d.call("GET", `/agents/${id}`)).body.prompt)),
      ["try A", "try B"],
      "one child per line, each with its own prompt",
    );

    // The tree marks both as forks of the root, under it.
    for (const child of children) {
      await row(page, child).getByTestId("fork-badge").waitFor();
      assert.equal(await row(page, child).getByTestId("fork-badge").innerText(), "fork");
      assert.equal(await row(page, child).getAttribute("data-forked-from"), root);
      assert.equal(
        await row(page, child).getByTestId("fork-badge").getAttribute("title"),
        `Forked from root (${root}) after turn 1`,
      );
    }
    assert.deepEqual(
      await page.locator("li[data-agent-id]").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-agent-id"))),
      [root, a, b],
    );

    // The event log says who was forked into whom, in words.
    // (Filtered by type: the log draws only the lines in view, and the children's events come after.)
    const log = page.getByRole("region", { name: "Event log" });
    await log.getByLabel("Filter by type").selectOption("agent_forked");
    await log.locator('.log-row[data-type="agent_forked"]').waitFor();
    assert.equal(
      await log.locator('.log-row[data-type="agent_forked"] .data').innerText(),
      `2 children after turn 1: ${a}, ${b}`,
    );

    // Child A's panel: where it was forked from, then its changes once its turn settled.
    assert.equal((await d.call("GET", `/agents/${a}/result?wait=60`)).body.result, "ready");
    await row(page, a).getByRole("link", { name: "root" }).click();
    const childPanel = panel(page, a);
    await childPanel.getByTestId("forked-from").waitFor();
    assert.equal(await childPanel.getByTestId("forked-from").innerText(), `root ${root} after turn 1`);
    await childPanel.getByRole("button", { name: "Changes", exact: true }).click();
    await childPanel.locator('tr[data-path="notes.txt"]').waitFor();
    const table = await childPanel
      .locator(".changes-table tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    assert.deepEqual(table, [
      ["added", "file", "added.txt", "6 bytes"],
      ["added", "file", "blob.bin", "3 bytes"],
      ["modified", "file", "notes.txt", "14 → 19 bytes"],
      ["added", "file", "page.html", "45 bytes"],
    ]);
    const notes = childPanel.locator('.file-diff[data-diff-path="notes.txt"]');
    assert.deepEqual(await notes.locator(".diff-del").allInnerTexts(), ["-two"]);
    assert.deepEqual(await notes.locator(".diff-add").allInnerTexts(), ["+TWO", "+four"]);
    assert.deepEqual(await notes.locator(".diff-ctx").allInnerTexts(), [" one", " three"]);
    // Added, removed and unchanged lines each look different.
    const colours = await Promise.all(
      [".diff-add", ".diff-del", ".diff-ctx"].map((kind) => notes.locator(kind).first().evaluate(background)),
    );
    assert.equal(new Set(colours).size, 3, colours.join(" / "));
    assert.equal(
      await childPanel.locator('.file-diff[data-diff-path="blob.bin"] [data-testid="no-diff"]').innerText(),
      "no diff: binary",
    );
    // The agent's HTML is text in the page: no element made of it, no script run.
    assert.deepEqual(await childPanel.locator('.file-diff[data-diff-path="page.html"] .diff-add').allInnerTexts(), [
      "+<b>bold</b><script>window.pwned = 1</script>",
    ]);
    assert.equal(await childPanel.locator(".changes b, .changes script").count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined);

    // Adopt: the child's files land in the root's /work, as the root's own bash shows.
    await childPanel.getByRole("button", { name: "Adopt", exact: true }).click();
    const adopted = childPanel.getByRole("status", { name: "Adopt results" });
    await adopted.waitFor();
    assert.deepEqual(await adopted.locator("li").allInnerTexts(), [
      "added added.txt",
      "added blob.bin",
      "modified notes.txt",
      "added page.html",
    ]);
    await log.getByLabel("Filter by type").selectOption("changes_adopted");
    await log.locator('.log-row[data-type="changes_adopted"]').waitFor();
    assert.equal(
      await log.locator('.log-row[data-type="changes_adopted"] .data').innerText(),
      `from ${a}: added added.txt, added blob.bin, modified notes.txt, added page.html`,
    );
    assert.equal(await turn(root, "show", "parent sees"), ADOPTED);
    assert.deepEqual(unexpected(errors), []);
    await page.context().close();
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("a conflict is said with the paths both changed, and Adopt, theirs win applies the child's", async () => {
    // After the fork the root changes notes.txt itself, as the child did.
    const { runId, root } = await idleRoot([
      { tool: "bash", args: { command: "echo parent-edit > /work/notes.txt" } },
      { text: "edited" },
      ...SHOW,
    ]);
    const forked = await d.call("POST", `/agents/${root}/fork`, { prompts: ["try"] });
    assert.equal(forked.status, 202, JSON.stringify(forked.body));
    const [child] = forked.body.agentIds as [string];
    assert.equal((await d.call("GET", `/agents/${child}/result?wait=60`)).body.result, "ready");
    assert.equal(await turn(root, "edit", "edited"), "edited");

    // Opened straight on the child, from its link.
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${runId}/${child}`);
    const childPanel = panel(page, child);
    await childPanel.getByRole("button", { name: "Changes", exact: true }).click();
    await childPanel.locator('tr[data-path="notes.txt"]').waitFor();
    await childPanel.getByRole("button", { name: "Adopt", exact: true }).click();
    const refusal = childPanel.getByRole("alert");
    await refusal.waitFor();
    assert.match(
      await refusal.innerText(),
      new RegExp(`^Adopt: 1 path was changed both by ${root} and by its child ${child} since the fork: notes\\.txt;`),
    );
    const theirs = childPanel.getByRole("button", { name: "Adopt, theirs win", exact: true });
    await theirs.click();
    const adopted = childPanel.getByRole("status", { name: "Adopt results" });
    await adopted.waitFor();
    assert.match(await adopted.innerText(), /modified notes\.txt/);
    assert.equal(await childPanel.getByRole("alert").count(), 0, "the refusal is gone once adopted");
    assert.equal(await turn(root, "show", "parent sees"), ADOPTED, "the child's notes.txt won");
    assert.deepEqual(unexpected(errors), []);
    await page.context().close();
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("Fork is disabled while the agent is in a turn, and a fork the API refuses shows its message", async () => {
    // The turn holds on an approval: in a turn for as long as the test wants.
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "asker",
        approve: [{ tool: "bash" }],
        script: [{ tool: "bash", args: { command: "echo asked" } }, { text: "done" }],
      },
      keepAlive: true,
      prompt: "go",
    });
    const { runId, rootAgentId: root } = created.body;
    const { page, errors } = await openConsole(browser, `${d.url}/#/runs/${runId}`);
    const approval = row(page, root).locator(".approval");
    await approval.waitFor({ timeout: 60_000 });
    const fork = await button(page, root, "Fork");
    assert.equal(await fork.isDisabled(), true, "in a turn");
    assert.equal(await fork.getAttribute("title"), "in a turn: an agent is forked between turns");

    await approval.getByRole("button", { name: "Allow" }).click();
    await until(async () => await fork.isEnabled(), "Fork enabled once the turn settled");
    await fork.click();
    await row(page, root).getByRole("button", { name: "Send", exact: true }).click();
    const refusal = row(page, root).getByRole("alert");
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /^Fork: .*prompts.*1\.\.32/);
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1, "nothing forked");
    assert.deepEqual(unexpected(errors), []);
    await page.context().close();
    await d.call("DELETE", `/runs/${runId}`);
  });
});
