import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { tempDir } from "../cli/helpers.ts";
import { settledWith as settledWithText } from "../support/agent-view.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { EDITOR_SPEC } from "../support/fork-fixtures.ts";
import { pollUntil } from "../support/poll.ts";
import { type Bridge, startBridge } from "./bridge-client.ts";

// The fork tools of the bridge (swarm_fork_agent, swarm_get_changes, swarm_adopt_changes,
// swarm_wait_agents); the routes behind them are in test/e2e/forks.test.ts.

describe("tool bridge: forks, changes, adopt and waits against a live daemon", () => {
  let d: Daemon;
  let bridge: Bridge;
  let dir: string;

  before(async () => {
    d = await startDaemon();
    dir = tempDir("swarm-bridge-forks-");
    bridge = await startBridge({ SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") });
  });
  after(async () => {
    await bridge?.close();
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The agent's newest result text, once it is `text` (a prompt's turn settled). */
  const settledWith = (agentId: string, text: string) => settledWithText(d.call, agentId, text);

  it("lists the four tools with their routes' fields, the service's defaults, and descriptions that lead from one to the next", async () => {
    const { tools } = await bridge.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t as Json]));
    const fork = byName.get("swarm_fork_agent");
    const forkInput = fork.inputSchema;
    assert.deepEqual(
      [Object.keys(forkInput.properties).sort(), forkInput.required],
      [["agentId", "budget", "count", "keepAlive", "prompt", "prompts", "spec"], ["agentId"]],
    );
    assert.deepEqual(
      [forkInput.properties.prompts.minItems, forkInput.properties.prompts.maxItems],
      [1, 32],
      "1..32 children",
    );
    assert.deepEqual([forkInput.properties.count.minimum, forkInput.properties.count.maximum], [1, 32]);
    assert.deepEqual([forkInput.properties.keepAlive.type, forkInput.properties.keepAlive.default], ["boolean", true]);
    assert.deepEqual(Object.keys(forkInput.properties.spec.properties).sort(), [
      "approve",
      "limits",
      "maxCostUsd",
      "maxTokens",
      "model",
      "name",
      "script",
    ]);
    assert.match(fork.description, /swarm_wait_agents.*swarm_get_changes.*swarm_adopt_changes.*swarm_stop_agent/s);
    assert.equal(fork.annotations.readOnlyHint, false);

    const changes = byName.get("swarm_get_changes");
    assert.deepEqual(
      [Object.keys(changes.inputSchema.properties), changes.inputSchema.required],
      [["agentId"], ["agentId"]],
    );
    assert.equal(changes.annotations.readOnlyHint, true);
    assert.match(changes.description, /swarm_fork_agent.*swarm_adopt_changes/s);

    const adopt = byName.get("swarm_adopt_changes");
    const adoptInput = adopt.inputSchema;
    assert.deepEqual(
      [Object.keys(adoptInput.properties).sort(), [...adoptInput.required].sort()],
      [
        ["agentId", "from", "onConflict"],
        ["agentId", "from"],
      ],
    );
    assert.deepEqual(
      [adoptInput.properties.onConflict.enum, adoptInput.properties.onConflict.default],
      [["fail", "theirs"], "fail"],
    );
    assert.match(adopt.description, /swarm_get_changes.*swarm_fork_agent.*swarm_prompt_agent/s);

    const wait = byName.get("swarm_wait_agents");
    const waitInput = wait.inputSchema;
    assert.deepEqual(
      [Object.keys(waitInput.properties).sort(), [...waitInput.required].sort()],
      [
        ["agentIds", "mode", "runId", "stopOthers", "timeoutMs"],
        ["agentIds", "runId"],
      ],
    );
    assert.deepEqual(
      [waitInput.properties.mode.enum, waitInput.properties.mode.default, waitInput.properties.stopOthers.default],
      [["all", "first"], "all", false],
    );
    assert.deepEqual(
      [
        waitInput.properties.timeoutMs.minimum,
        waitInput.properties.timeoutMs.maximum,
        waitInput.properties.timeoutMs.default,
      ],
      [1, 600_000, 240_000],
    );
    assert.deepEqual([waitInput.properties.agentIds.minItems, waitInput.properties.agentIds.maxItems], [1, 256]);
    assert.match(wait.description, /swarm_fork_agent.*swarm_get_result/s);
  });

  it("forks tries, waits for all (progress while it holds) and for the first, reads a child's changes and adopts them", async () => {
    // Turn 1 writes the files the children start from; turn 2 edits one after the fork; turn 3 shows /work.
    const created = await bridge.tool("swarm_create_run", {
      spec: {
        name: "lead",
        script: [
          { tool: "bash", args: { command: "echo base > /work/shared.txt && echo keep > /work/gone.txt" } },
          { text: "ready" },
          { tool: "bash", args: { command: "echo root >> /work/shared.txt" } },
          { text: "root edited" },
          { tool: "bash", args: { command: "cat /work/shared.txt /work/new.txt" } },
          { text: "{{lastToolResult}}" },
        ],
      },
      prompt: "start",
      keepAlive: true,
    });
    assert.equal(created.isError, false, created.text);
    const { runId, rootAgentId: lead } = created.data as { runId: string; rootAgentId: string };
    await settledWith(lead, "ready");

    const forked = await bridge.tool("swarm_fork_agent", {
      agentId: lead,
      prompts: ["make it so"],
      spec: EDITOR_SPEC,
    });
    assert.equal(forked.isError, false, forked.text);
    const [editor] = forked.data.agentIds as [string];
    assert.deepEqual(forked.data, { agentId: lead, agentIds: [editor] });
    assert.equal(
      forked.text.split("\n")[0],
      `Forked ${lead} into 1 child(ren): ${editor}; each stays live after its turn. Wait for them with swarm_wait_agents, compare them with swarm_get_changes.`,
    );
    const slowFork = await bridge.tool("swarm_fork_agent", {
      agentId: lead,
      count: 2,
      prompt: "think",
      spec: { name: "slow", script: [{ text: "slow", delayMs: 7_000 }] },
    });
    assert.equal(slowFork.isError, false, slowFork.text);
    const slow = slowFork.data.agentIds as [string, string];
    assert.equal(slow.length, 2);

    const early = await bridge.tool("swarm_wait_agents", { runId, agentIds: slow, timeoutMs: 500 });
    assert.equal(early.isError, false, early.text);
    assert.deepEqual(early.data, {
      runId,
      results: slow.map((agentId) => ({ agentId, state: "pending", outcome: null, result: null })),
      winner: null,
    });
    assert.equal(
      early.text.split("\n")[0],
      "2 agent(s); 0 settled; 2 still pending after 500 ms: call again to keep waiting.",
    );

    const progress: Json[] = [];
    const all = await bridge.tool(
      "swarm_wait_agents",
      { runId, agentIds: [editor, ...slow], timeoutMs: 60_000 },
      { onprogress: (p) => progress.push(p) },
    );
    assert.equal(all.isError, false, all.text);
    assert.deepEqual(
      all.data.results.map((r: Json) => [r.agentId, r.state, r.outcome, r.result]),
      [
        [editor, "settled", "success", "edited: make it so"],
        [slow[0], "settled", "success", "slow"],
        [slow[1], "settled", "success", "slow"],
      ],
    );
    assert.equal(all.text.split("\n")[0], "3 agent(s); 3 settled (3 success).");
    assert.ok(progress.length >= 1, "the 7 s wait sent progress");
    assert.equal(progress[0].total, 60, "out of the wait's 60 s");

    const first = await bridge.tool("swarm_wait_agents", {
      runId,
      agentIds: [slow[0], editor, slow[1]],
      mode: "first",
      stopOthers: true,
    });
    assert.equal(first.isError, false, first.text);
    assert.equal(first.data.winner, editor, "the editor succeeded first");
    assert.deepEqual(
      first.data.results.map((r: Json) => r.agentId),
      [editor],
    );
    assert.equal(
      first.text.split("\n")[0],
      `Winner ${editor}: the first to settle with outcome success; the other listed agents still live were stopped.`,
    );
    for (const id of slow)
      assert.equal((await bridge.tool("swarm_get_agent", { agentId: id })).data.state, "aborted", `${id} stopped`);
    assert.equal(
      (await bridge.tool("swarm_get_agent", { agentId: editor })).data.state,
      "running",
      "the winner goes on",
    );

    const changes = await bridge.tool("swarm_get_changes", { agentId: editor });
    assert.equal(changes.isError, false, changes.text);
    assert.deepEqual(changes.data, (await d.call("GET", `/agents/${editor}/changes`)).body);
    assert.deepEqual(
      changes.data.files.map((f: Json) => [f.path, f.change, f.kind, f.size, f.baseSize]),
      [
        ["gone.txt", "deleted", "file", null, 5],
        ["link", "added", "symlink", 10, null],
        ["new.txt", "added", "file", 4, null],
        ["shared.txt", "modified", "file", 11, 5],
      ],
    );
    assert.equal(changes.data.files[3].diff, "--- a/shared.txt\n+++ b/shared.txt\n@@ -1,1 +1,2 @@\n base\n+child\n");
    assert.equal(
      changes.text.split("\n")[0],
      `${editor} changed 4 path(s) in /work since its fork from ${lead} (turn 1): 2 added, 1 modified, 1 deleted; ${changes.data.diffBytes} bytes of diff.`,
    );
    const unchanged = await bridge.tool("swarm_get_changes", { agentId: slow[0] });
    assert.equal(
      unchanged.text.split("\n")[0],
      `${slow[0]} changed nothing in /work since its fork from ${lead} (turn 1).`,
    );
    const notFork = await bridge.tool("swarm_get_changes", { agentId: lead });
    assert.deepEqual([notFork.isError, notFork.data.status], [true, 409]);
    assert.match(notFork.text, /HTTP 409: agent a_[0-9a-f]+ was not made by a fork/);

    // The lead edits shared.txt after the fork too: a conflict, and nothing is applied.
    assert.equal((await bridge.tool("swarm_prompt_agent", { agentId: lead, text: "edit" })).isError, false);
    await settledWith(lead, "root edited");
    const conflict = await bridge.tool("swarm_adopt_changes", { agentId: lead, from: editor });
    assert.equal(conflict.isError, true);
    assert.equal(conflict.data.status, 409);
    assert.equal(
      conflict.text,
      `swarmd refused POST /agents/${lead}/adopt with HTTP 409: 1 path was changed both by ${lead} and by its child ${editor} since the fork: shared.txt; nothing was applied (adopt with onConflict "theirs" to take the child's)`,
    );
    const theirs = await bridge.tool("swarm_adopt_changes", { agentId: lead, from: editor, onConflict: "theirs" });
    assert.equal(theirs.isError, false, theirs.text);
    assert.deepEqual(theirs.data, {
      agentId: lead,
      from: editor,
      files: [
        { path: "gone.txt", change: "deleted" },
        { path: "link", change: "added" },
        { path: "new.txt", change: "added" },
        { path: "shared.txt", change: "modified" },
      ],
      skipped: [],
    });
    assert.equal(
      theirs.text.split("\n")[0],
      `${lead} adopted 4 change(s) of ${editor}: 2 added, 1 modified, 1 deleted.`,
    );
    const again = await bridge.tool("swarm_adopt_changes", { agentId: lead, from: editor, onConflict: "theirs" });
    assert.equal(
      again.text.split("\n")[0],
      `Nothing to adopt: ${editor} changed nothing that ${lead}'s /work does not already hold.`,
    );
    assert.equal((await bridge.tool("swarm_prompt_agent", { agentId: lead, text: "show" })).isError, false);
    await settledWith(lead, "base\nchild\nnew\n");

    const stranger = await bridge.tool("swarm_adopt_changes", { agentId: editor, from: slow[0] });
    assert.deepEqual([stranger.isError, stranger.data.status], [true, 400]);
    assert.match(stranger.text, /is not a fork child of/);
    const outsider = await bridge.tool("swarm_wait_agents", { runId, agentIds: ["a_00"] });
    assert.deepEqual([outsider.isError, outsider.data.status], [true, 400]);
    await bridge.tool("swarm_delete_run", { runId });
  });

  it("refuses inputs the routes refuse, in the tool's words, before calling the service; a busy agent is the service's 409", async () => {
    const created = await bridge.tool("swarm_create_run", {
      spec: { name: "busy", script: [{ text: "ready" }, { text: "still thinking", delayMs: 3_000 }] },
      prompt: "go",
      keepAlive: true,
    });
    const { runId, rootAgentId: lead } = created.data as { runId: string; rootAgentId: string };
    await settledWith(lead, "ready");
    for (const [tool, args, words] of [
      ["swarm_fork_agent", { agentId: lead }, /: Give either prompts, or count and prompt\.$/],
      ["swarm_fork_agent", { agentId: lead, prompts: ["a"], count: 2, prompt: "b" }, /Give either prompts/],
      ["swarm_fork_agent", { agentId: lead, count: 2 }, /count and prompt go together\./],
      ["swarm_fork_agent", { agentId: lead, prompts: [] }, /prompts/],
      ["swarm_fork_agent", { agentId: lead, count: 33, prompt: "x" }, /count/],
      ["swarm_adopt_changes", { agentId: lead, from: "a_1", onConflict: "ours" }, /onConflict/],
      ["swarm_wait_agents", { runId, agentIds: [lead], mode: "last" }, /mode/],
      ["swarm_wait_agents", { runId, agentIds: [lead], timeoutMs: 600_001 }, /timeoutMs/],
      ["swarm_wait_agents", { runId, agentIds: [] }, /agentIds/],
    ] as const) {
      const answer = await bridge.tool(tool, args);
      assert.equal(answer.isError, true, `${tool} ${JSON.stringify(args)}`);
      assert.match(answer.text, words, `${tool} ${JSON.stringify(args)}`);
    }
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1, "no refused fork made a child");

    await bridge.tool("swarm_prompt_agent", { agentId: lead, text: "more" });
    await pollUntil(
      async () => (await d.call("GET", `/agents/${lead}/machine`)).body.tags as string[],
      (tags) => !tags.includes("idle") && tags.includes("running"),
      "the lead's second turn",
    );
    const busy = await bridge.tool("swarm_fork_agent", { agentId: lead, prompts: ["x"] });
    assert.deepEqual([busy.isError, busy.data.status], [true, 409]);
    assert.match(busy.text, /HTTP 409: agent a_[0-9a-f]+ is in a turn .*only between turns/);
    await settledWith(lead, "still thinking");
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1, "the busy agent was not forked");
    await bridge.tool("swarm_delete_run", { runId });
  });
});
