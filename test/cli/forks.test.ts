import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { settledWith as settledWithText } from "../support/agent-view.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { EDITOR_SPEC } from "../support/fork-fixtures.ts";
import { pollUntil } from "../support/poll.ts";
import { swarm, swarmInProcess, tempDir } from "./helpers.ts";

// `swarm fork`, `changes`, `adopt` and `wait` against a daemon; their lines and command-line errors
// are in forks-lines.test.ts, the routes behind them in test/e2e/forks.test.ts.

describe("swarm fork, changes, adopt and wait against a live daemon", () => {
  let d: Daemon;
  let env: Record<string, string>;
  let dir: string;
  const json = (text: string): Json => JSON.parse(text);

  before(async () => {
    d = await startDaemon();
    env = { SWARM_URL: d.url };
    dir = tempDir("swarm-forks-");
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The agent's newest result text, once it is `text` (a prompt's turn settled). */
  const settledWith = (agentId: string, text: string) => settledWithText(d.call, agentId, text);

  it("forks tries from an idle root, waits for all and for the first, shows a child's changes, adopts them (a conflict, then --theirs)", async () => {
    // Turn 1 writes the files the children start from; turn 2 edits one after the fork; turn 3
    // shows /work (slowly, so that a fork and an adopt can be tried while it runs).
    const root = (
      await d.call("POST", "/runs", {
        spec: {
          name: "root",
          script: [
            { tool: "bash", args: { command: "echo base > /work/shared.txt && echo keep > /work/gone.txt" } },
            { text: "ready" },
            { tool: "bash", args: { command: "echo root >> /work/shared.txt" } },
            { text: "root edited" },
            { tool: "bash", args: { command: "cat /work/shared.txt /work/new.txt" } },
            { text: "{{lastToolResult}}", delayMs: 2_000 },
          ],
        },
        keepAlive: true,
        prompt: "start",
      })
    ).body;
    const { runId, rootAgentId: lead } = root as { runId: string; rootAgentId: string };
    await settledWith(lead, "ready");

    const editorSpec = join(dir, "editor.json");
    writeFileSync(editorSpec, JSON.stringify(EDITOR_SPEC));
    const forked = await swarm(["fork", lead, "--prompt", "make\nit so", "--spec", editorSpec, "--json"], env);
    assert.equal(forked.code, 0, forked.stderr);
    const { agentIds } = json(forked.stdout);
    assert.deepEqual(json(forked.stdout), { runId, agentIds });
    const editor = agentIds[0] as string;
    assert.equal(agentIds.length, 1);
    const view = (await d.call("GET", `/agents/${editor}`)).body;
    assert.deepEqual(
      [view.specName, view.parentAgentId, view.forkedFrom],
      ["editor", lead, { agentId: lead, forkPoint: { turn: 1 } }],
    );

    writeFileSync(join(dir, "slow.json"), JSON.stringify({ script: [{ text: "slow", delayMs: 4_000 }] }));
    const slowFork = await swarmInProcess(
      ["fork", lead, "--count", "2", "--prompt", "think", "--spec", join(dir, "slow.json"), "--name", "slow"],
      env,
    );
    assert.equal(slowFork.code, 0, slowFork.stderr);
    const slow = slowFork.stdout
      .split("\n")
      .slice(1, 3)
      .map((line) => line.split(" ")[0] ?? "");
    const [s1, s2] = slow as [string, string];
    assert.equal(
      slowFork.stdout,
      [
        `forked ${lead} into 2 agents in run ${runId}; each stays live after its turn, to be compared`,
        `${s1}  think`,
        `${s2}  think`,
        `wait for them: swarm wait ${runId} ${s1} ${s2}`,
        "",
      ].join("\n"),
    );
    assert.deepEqual(
      await Promise.all(slow.map(async (id) => (await d.call("GET", `/agents/${id}`)).body.specName)),
      ["slow", "slow"],
      "--name renames the children",
    );

    // Their 4 s are not over: pending, exit 4, with and without --first.
    const early = await swarmInProcess(["wait", runId, s1, s2, "--timeout", "500"], env);
    assert.deepEqual(
      [early.code, early.stdout, early.stderr],
      [
        4,
        `AGENT               STATE    OUTCOME  RESULT\n${s1}  pending  -        -\n${s2}  pending  -        -\n`,
        "swarm: 2 of 2 agents still pending after 500 ms\n",
      ],
    );
    const noWinner = await swarmInProcess(["wait", runId, s1, s2, "--first", "--timeout", "500", "--json"], env);
    assert.equal(noWinner.code, 4);
    assert.deepEqual(json(noWinner.stdout), {
      results: [
        { agentId: s1, state: "pending", outcome: null, result: null },
        { agentId: s2, state: "pending", outcome: null, result: null },
      ],
      winner: null,
    });

    const all = await swarm(["wait", runId, editor, s1, s2], env);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(
      all.stdout,
      [
        "AGENT               STATE    OUTCOME  RESULT",
        `${editor}  settled  success  edited: make it so`,
        `${s1}  settled  success  slow`,
        `${s2}  settled  success  slow`,
        "",
      ].join("\n"),
    );
    // The editor succeeded first; the others, idle and kept alive, are stopped.
    const first = await swarmInProcess(["wait", runId, s1, editor, s2, "--first", "--stop-others"], env);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(
      first.stdout,
      [
        `winner ${editor}`,
        "AGENT               STATE    OUTCOME  RESULT",
        `${editor}  settled  success  edited: make it so`,
        "stopped every other listed agent still live",
        "",
      ].join("\n"),
    );
    for (const id of slow) assert.equal((await d.call("GET", `/agents/${id}`)).body.state, "aborted", id);
    assert.equal((await d.call("GET", `/agents/${editor}`)).body.state, "running", "the winner goes on");

    const changes = await swarm(["changes", editor], env);
    assert.equal(changes.code, 0, changes.stderr);
    assert.equal(
      changes.stdout,
      [
        `${editor} changed 4 paths in /work since its fork from ${lead} at turn 1`,
        "CHANGE    KIND     SIZE  BASE  DIFF   PATH",
        "deleted   file     -     5     +0 -1  gone.txt",
        "added     symlink  10    -     -      link -> shared.txt",
        "added     file     4     -     +1 -0  new.txt",
        "modified  file     11    5     +1 -0  shared.txt",
        "",
      ].join("\n"),
    );
    const diff = await swarmInProcess(["changes", editor, "--diff"], env);
    assert.deepEqual(
      [diff.code, diff.stdout, diff.stderr],
      [
        0,
        "--- a/gone.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-keep\n" +
          "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+new\n" +
          "--- a/shared.txt\n+++ b/shared.txt\n@@ -1,1 +1,2 @@\n base\n+child\n",
        "not in the diff: link (added symlink -> shared.txt)\n",
      ],
    );
    const asJson = await swarmInProcess(["changes", editor, "--json"], env);
    assert.deepEqual(json(asJson.stdout), (await d.call("GET", `/agents/${editor}/changes`)).body);
    const none = await swarmInProcess(["changes", s1], env);
    assert.deepEqual(
      [none.code, none.stdout, none.stderr],
      [0, "", `${s1} changed nothing in /work since its fork from ${lead} at turn 1\n`],
      "an ended child's changes are still read",
    );
    const notFork = await swarmInProcess(["changes", lead], env);
    assert.deepEqual(
      [notFork.code, notFork.stdout, notFork.stderr],
      [1, "", `swarm: service error 409: agent ${lead} was not made by a fork: it has no fork point\n`],
    );

    // The root edits shared.txt after the fork too: a conflict, and nothing is applied.
    await d.call("POST", `/agents/${lead}/prompt`, { text: "edit" });
    await settledWith(lead, "root edited");
    const conflict = await swarmInProcess(["adopt", lead, "--from", editor], env);
    assert.deepEqual(
      [conflict.code, conflict.stdout, conflict.stderr],
      [
        1,
        "",
        `swarm: service error 409: 1 path was changed both by ${lead} and by its child ${editor} since the fork: shared.txt; nothing was applied (adopt with onConflict "theirs" to take the child's)\n` +
          `swarm: to take ${editor}'s version of those paths: swarm adopt ${lead} --from ${editor} --theirs\n`,
      ],
    );
    const theirs = await swarm(["adopt", lead, "--from", editor, "--theirs"], env);
    assert.equal(theirs.code, 0, theirs.stderr);
    assert.equal(
      theirs.stdout,
      `${lead} adopted 4 changes of ${editor}\ndeleted   gone.txt\nadded     link\nadded     new.txt\nmodified  shared.txt\n`,
    );
    const again = await swarmInProcess(["adopt", lead, "--from", editor, "--theirs", "--json"], env);
    assert.deepEqual(json(again.stdout), { agentId: lead, from: editor, files: [], skipped: [] }, "already there");
    const stranger = await swarmInProcess(["adopt", lead, "--from", lead], env);
    assert.deepEqual(
      [stranger.code, stranger.stderr],
      [1, `swarm: service error 400: body.from: ${lead} is not a fork child of ${lead}\n`],
    );

    // In a turn (its slow turn 3 shows /work): neither forked nor adopting; the turn then sees the child's files.
    await d.call("POST", `/agents/${lead}/prompt`, { text: "show" });
    await pollUntil(
      async () => (await d.call("GET", `/agents/${lead}/machine`)).body.tags as string[],
      (tags) => !tags.includes("idle") && tags.includes("running"),
      "the root's turn",
    );
    const busyFork = await swarmInProcess(["fork", lead, "--prompt", "x"], env);
    assert.equal(busyFork.code, 1);
    assert.match(
      busyFork.stderr,
      new RegExp(`^swarm: service error 409: agent ${lead} is in a turn .*only between turns`),
    );
    const busyAdopt = await swarmInProcess(["adopt", lead, "--from", editor], env);
    assert.equal(busyAdopt.code, 1);
    assert.match(busyAdopt.stderr, /^swarm: service error 409: .* is in a turn .*adopts changes only between turns/);
    assert.doesNotMatch(busyAdopt.stderr, /--theirs/, "no conflict hint for a busy agent");
    await settledWith(lead, "base\nchild\nnew\n");

    const gone = await swarmInProcess(["fork", s1, "--prompt", "x"], env);
    assert.deepEqual([gone.code, gone.stderr], [1, `swarm: ${s1} already ended (aborted): nothing to fork\n`]);
    const outsider = await swarmInProcess(["wait", runId, "a_00"], env);
    assert.deepEqual(
      [outsider.code, outsider.stderr],
      [1, `swarm: service error 400: body.agentIds: a_00 is not an agent of run ${runId}\n`],
    );
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("fork: a child a spawn budget refused is listed, said on stderr (and under budgetExceeded with --json), exit 1", async () => {
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "capped", script: [] },
        keepAlive: true,
        prompt: "go",
        budget: { maxAgents: 1 },
      })
    ).body;
    const { runId, rootAgentId: lead } = created as { runId: string; rootAgentId: string };
    await settledWith(lead, "go");
    const forked = await swarmInProcess(["fork", lead, "-p", "a", "-p", "b"], env);
    const [kept, refused] = forked.stdout
      .split("\n")
      .slice(1, 3)
      .map((line) => line.split(" ")[0] ?? "") as [string, string];
    assert.deepEqual(
      [forked.code, forked.stdout, forked.stderr],
      [
        1,
        `forked ${lead} into 2 agents in run ${runId}; each stays live after its turn, to be compared\n${kept}  a\n${refused}  b\nwait for them: swarm wait ${runId} ${kept} ${refused}\n`,
        `swarm: ${refused} refused by a spawn budget (spawnDepth or maxAgents) of ${lead}'s lineage: it ended budget-exceeded\n`,
      ],
    );
    assert.equal((await d.call("GET", `/agents/${refused}`)).body.outcome, "budget-exceeded");
    assert.notEqual((await d.call("GET", `/agents/${kept}`)).body.outcome, "budget-exceeded");
    const again = await swarmInProcess(["fork", lead, "-p", "c", "--json"], env);
    const { agentIds } = json(again.stdout);
    assert.deepEqual([again.code, json(again.stdout)], [1, { runId, agentIds, budgetExceeded: agentIds }]);
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("wait --first: every agent settled and none succeeded is exit 1; a fork with --no-keep-alive ends its children after their turn", async () => {
    const created = (
      await d.call("POST", "/runs", { spec: { name: "lead", script: [] }, keepAlive: true, prompt: "go" })
    ).body;
    const { runId, rootAgentId: lead } = created as { runId: string; rootAgentId: string };
    await settledWith(lead, "go");
    const forked = await swarmInProcess(["fork", lead, "-p", "one", "-p", "two", "--no-keep-alive"], env);
    assert.equal(forked.code, 0, forked.stderr);
    const [kidA, kidB] = forked.stdout
      .split("\n")
      .slice(1, 3)
      .map((line) => line.split(" ")[0] ?? "") as [string, string];
    assert.equal(
      forked.stdout,
      `forked ${lead} into 2 agents in run ${runId}; each ends after its turn\n${kidA}  one\n${kidB}  two\nwait for them: swarm wait ${runId} ${kidA} ${kidB}\n`,
    );
    const both = await swarmInProcess(["wait", runId, kidA, kidB, "--json"], env);
    assert.deepEqual(
      json(both.stdout).results.map((r: Json) => [r.agentId, r.state, r.outcome, r.result]),
      [
        [kidA, "settled", "success", "one"],
        [kidB, "settled", "success", "two"],
      ],
      "an echoing script answers each child's own prompt",
    );
    await pollUntil(
      async () => (await d.call("GET", `/agents/${kidB}`)).body.state,
      (state) => state === "done",
      "a child not kept alive ends",
    );

    // A child stopped before its first answer: settled, aborted, so no agent of the wait succeeded.
    const failing = join(dir, "failing.json");
    writeFileSync(failing, JSON.stringify({ name: "doomed", script: [{ text: "never", delayMs: 60_000 }] }));
    const doomed = await swarmInProcess(["fork", lead, "-p", "x", "--spec", failing, "--json"], env);
    const [loser] = json(doomed.stdout).agentIds as [string];
    await swarmInProcess(["stop", loser], env);
    const lost = await swarmInProcess(["wait", runId, loser, "--first"], env);
    assert.deepEqual(
      [lost.code, lost.stdout, lost.stderr],
      [
        1,
        `AGENT               STATE    OUTCOME  RESULT\n${loser}  settled  aborted  -\n`,
        "swarm: no winner: every one of 1 agent settled and none with outcome success\n",
      ],
    );
    await d.call("DELETE", `/runs/${runId}`);
  });
});
