import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { compactTokens, compactUsd } from "../../src/cli/spend-format.ts";
import { renderTree, treeJson } from "../../src/cli/tree-render.ts";
import { parseFrame } from "../../src/client/event-stream.ts";
import { trackRun } from "../../src/client/run-tracker.ts";
import { persistedFrame } from "../../src/http/sse/sse-frame.ts";
import type { AgentView, Usage } from "../../src/swarm-api.ts";
import { totalTokens } from "../../src/views/run-view.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { freePort } from "../support/daemon-process.ts";
import { FAMILY_SPEC, SPENT, swarm, swarmInProcess, tempDir } from "./helpers.ts";

describe("swarm tree rendering", () => {
  const zero = (): Usage => ({
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: 0,
    calls: 0,
  });
  const agent = (agentId: string, parentAgentId: string | null, specName: string): AgentView => ({
    agentId,
    runId: "r_1",
    parentAgentId,
    depth: parentAgentId ? 1 : 0,
    spawnIndex: 0,
    state: "running",
    specName,
    sandboxId: `sb_${agentId}`,
    createdAt: 1,
    endedAt: null,
    outcome: null,
    pendingPermissions: [],
    usage: zero(),
    subtreeUsage: zero(),
    toolErrors: 0,
  });
  const modelUsage = (seq: number, agentId: string, inputTokens: number, outputTokens: number, costUsd: number) => ({
    seq,
    type: "model_usage",
    agentId,
    at: 1,
    data: {
      callId: `c_${seq}`,
      provider: "swarmd-script",
      model: "scripted",
      inputTokens,
      outputTokens,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd,
      durationMs: 5,
      usageKnown: true,
    },
  });

  it("folds model_usage events as they arrive into each agent's subtree spend and the run's total; pausedBy budget shows like the others", () => {
    const tracker = trackRun({
      runId: "r_1",
      rootAgentId: "a_1",
      asOf: 5,
      usage: zero(),
      agents: [agent("a_1", null, "lead"), agent("a_2", "a_1", "kid")],
    });
    assert.deepEqual(
      renderTree(tracker),
      ["run r_1 · 2 agents · 2 live · seq 5", "● lead a_1 running", "└─ ● kid a_2 running"],
      "no calls: no spend shown",
    );

    assert.equal(tracker.apply(modelUsage(6, "a_2", 12_000, 300, 0.0135)), true);
    assert.deepEqual(renderTree(tracker), [
      "run r_1 · 2 agents · 2 live · 12.3k tok $0.0135 · seq 6",
      "● lead a_1 running · 12.3k tok $0.0135",
      "└─ ● kid a_2 running · 12.3k tok $0.0135",
    ]);
    assert.equal(
      tracker.apply(modelUsage(6, "a_2", 12_000, 300, 0.0135)),
      false,
      "a seq already folded is not counted twice",
    );
    tracker.apply(modelUsage(7, "a_1", 900, 100, 0.0015));
    tracker.apply({
      seq: 8,
      type: "agent_state_changed",
      agentId: "a_1",
      at: 2,
      data: { from: "running", to: "paused", reason: "budget" },
    });
    tracker.apply({
      seq: 9,
      type: "agent_state_changed",
      agentId: "a_2",
      at: 2,
      data: { from: "running", to: "paused", reason: "cascade" },
    });
    assert.deepEqual(renderTree(tracker), [
      "run r_1 · 2 agents · 2 live · 13.3k tok $0.0150 · seq 9",
      "‖ lead a_1 paused (by budget) · 13.3k tok $0.0150",
      "└─ ‖ kid a_2 paused (by cascade) · 12.3k tok $0.0135",
    ]);
    assert.deepEqual(
      tracker.view.agents.get("a_1")?.usage,
      { inputTokens: 900, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.0015, calls: 1 },
      "its own calls apart",
    );
    assert.deepEqual(
      [compactTokens(950), compactTokens(4_500_000), compactUsd(12.345), compactUsd(0.00002)],
      ["950", "4.5M", "$12.35", "<$0.0001"],
    );
  });

  it("folds approval requests and drains: pending counts from the snapshot and the events after it, (draining) until the agent ends; JSON keys only when set", () => {
    const tracker = trackRun({
      runId: "r_1",
      rootAgentId: "a_1",
      asOf: 5,
      usage: zero(),
      agents: [{ ...agent("a_1", null, "lead"), pendingPermissions: ["p_1"] }, agent("a_2", "a_1", "kid")],
    });
    // As the client gets them: written by the daemon's SSE serializer, read back by the client's parser.
    const streamed = (seq: number, type: string, agentId: string, data: Record<string, unknown>) => {
      const event = parseFrame(persistedFrame({ runId: "r_1", seq, type, agentId, at: 2, data }).trimEnd());
      assert.ok(event);
      return event;
    };
    const asked = (seq: number, agentId: string, requestId: string) =>
      streamed(seq, "permission_request", agentId, {
        requestId,
        tool: "bash",
        args: { command: "ls" },
        at: 2,
        expiresAt: null,
      });
    const decided = (seq: number, agentId: string, requestId: string, by: string) =>
      streamed(seq, "permission_resolved", agentId, { requestId, decision: "deny", message: null, by });
    const draining = (seq: number, agentId: string) =>
      streamed(seq, "agent_draining", agentId, { subtree: true, deadline: 600_004 });
    assert.deepEqual(renderTree(tracker), [
      "run r_1 · 2 agents · 2 live · seq 5",
      "● lead a_1 running · 1 approval pending",
      "└─ ● kid a_2 running",
    ]);
    const jsonAgents = (): Json[] => treeJson(tracker).agents as Json[];
    const oldKeys = [
      "agentId",
      "parentAgentId",
      "depth",
      "spawnIndex",
      "specName",
      "state",
      "outcome",
      "toolErrors",
      "usage",
      "subtreeUsage",
      "children",
    ];
    assert.deepEqual(Object.keys(jsonAgents()[1]), oldKeys, "an agent with nothing pending reads as before");

    tracker.apply(asked(6, "a_2", "p_2"));
    tracker.apply(asked(7, "a_2", "p_3"));
    assert.equal(renderTree(tracker)[2], "└─ ● kid a_2 running · 2 approvals pending");
    tracker.apply(decided(8, "a_1", "p_1", "operator")); // known from the snapshot alone
    tracker.apply(decided(9, "a_2", "p_2", "timeout"));
    tracker.apply(draining(10, "a_1"));
    tracker.apply(draining(11, "a_2"));
    assert.deepEqual(renderTree(tracker), [
      "run r_1 · 2 agents · 2 live · seq 11",
      "● lead a_1 running (draining)",
      "└─ ● kid a_2 running (draining) · 1 approval pending",
    ]);
    const [lead, kid] = jsonAgents();
    assert.deepEqual(
      [lead.draining, lead.pendingPermissions, kid.draining, kid.pendingPermissions],
      [true, undefined, true, ["p_3"]],
    );

    tracker.apply(decided(12, "a_2", "p_3", "stop"));
    tracker.apply(
      streamed(13, "agent_ended", "a_2", { outcome: "success", endedAt: 5, error: null, reason: "drained" }),
    );
    assert.deepEqual(renderTree(tracker).slice(1), ["● lead a_1 running (draining)", "└─ ✓ kid a_2 done success"]);
    assert.deepEqual(Object.keys(jsonAgents()[1]), oldKeys, "an ended agent is no longer draining");
    const snapshotDraining = trackRun({
      runId: "r_1",
      rootAgentId: "a_1",
      asOf: 5,
      usage: zero(),
      agents: [{ ...agent("a_1", null, "lead"), state: "paused", pausedBy: "operator", draining: true }],
    });
    assert.equal(renderTree(snapshotDraining)[1], "‖ lead a_1 paused (by operator) (draining)");
  });

  it("counts tool_refused events into toolErrors from the snapshot on, and says so beside the outcome", () => {
    const tracker = trackRun({
      runId: "r_1",
      rootAgentId: "a_1",
      asOf: 5,
      usage: zero(),
      agents: [{ ...agent("a_1", null, "lead"), toolErrors: 2 }, agent("a_2", "a_1", "kid")],
    });
    const refused = (seq: number, agentId: string, count: number) => ({
      seq,
      type: "tool_refused",
      agentId,
      at: 2,
      data: { tool: "spawn_agent", code: "HOST_CALLS_FULL", message: "too many host calls", count },
    });
    assert.equal(renderTree(tracker)[1], "● lead a_1 running · 2 tool errors");
    assert.equal(renderTree(tracker)[2], "└─ ● kid a_2 running", "none: nothing said");
    tracker.apply(refused(6, "a_1", 1));
    tracker.apply(refused(7, "a_2", 1));
    tracker.apply(refused(8, "a_2", 40)); // a burst written as one event
    tracker.apply({
      seq: 9,
      type: "agent_ended",
      agentId: "a_2",
      at: 2,
      data: { outcome: "success", endedAt: 5, error: null },
    });
    assert.deepEqual(renderTree(tracker).slice(1), [
      "● lead a_1 running · 3 tool errors",
      "└─ ✓ kid a_2 done success · 41 tool errors",
    ]);
    assert.deepEqual(
      (treeJson(tracker).agents as Json[]).map((a) => a.toolErrors),
      [3, 41],
    );
    tracker.apply(refused(10, "a_1", 1));
    assert.equal(renderTree(tracker)[1], "● lead a_1 running · 4 tool errors");
    const one = trackRun({
      runId: "r_1",
      rootAgentId: "a_1",
      asOf: 5,
      usage: zero(),
      agents: [agent("a_1", null, "x")],
    });
    one.apply(refused(6, "a_1", 1));
    assert.equal(renderTree(one)[1], "● x a_1 running · 1 tool error");
  });
});

describe("swarm CLI against a live daemon", () => {
  let d: Daemon;
  let dir: string;
  let env: Record<string, string>;
  const file = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
    return path;
  };
  const json = (text: string): Json => JSON.parse(text);
  /** A run whose root stays live and idle (keepAlive) with one live child under it. */
  async function liveFamily() {
    const created = (await d.call("POST", "/runs", { spec: { name: "boss", script: [] }, keepAlive: true })).body;
    await waitForState(d, created.rootAgentId, "running");
    const child = (
      await d.call("POST", `/runs/${created.runId}/agents`, {
        parentAgentId: created.rootAgentId,
        spec: { name: "helper", script: [] },
        keepAlive: true,
      })
    ).body;
    await waitForState(d, child.agentId, "running");
    return { runId: created.runId as string, root: created.rootAgentId as string, child: child.agentId as string };
  }

  before(async () => {
    d = await startDaemon();
    dir = tempDir("swarm-cli-");
    env = { SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") };
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("exits 2 with the usage for a bad command line", async () => {
    const none = await swarm([], env);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /Usage:/);
    const unknown = await swarm(["frobnicate"], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "frobnicate"/);
    const missing = await swarmInProcess(["result"], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing <agentId>[\s\S]*usage: swarm result/);
    const badWait = await swarmInProcess(["result", "a_1", "--wait", "241"], env);
    assert.equal(badWait.code, 2);
    assert.match(badWait.stderr, /--wait must be an integer 0\.\.240/);
    const badOption = await swarmInProcess(["tree", "r_1", "--bogus"], env);
    assert.equal(badOption.code, 2);
    assert.equal(
      badOption.stderr,
      "swarm: unknown option --bogus; swarm tree takes --json, --url, --help, --once\nusage: swarm tree <runId> [--once] [--json]\n",
      "nothing near: the flags it has",
    );
    const typo = await swarm(["result", "a_1", "--wiat", "3"], env);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /^swarm: unknown option --wiat; did you mean --wait\?\nusage: swarm result /);
    const noValue = await swarmInProcess(["result", "a_1", "--wait"], env);
    assert.equal(noValue.code, 2);
    assert.match(noValue.stderr, /^swarm: --wait needs a value\n/);
    const valued = await swarmInProcess(["tree", "r_1", "--once=yes"], env);
    assert.match(valued.stderr, /^swarm: --once takes no value\n/);
    const shortNoValue = await swarmInProcess(["deny", "a_1", "p_1", "-m"], env);
    assert.match(shortNoValue.stderr, /^swarm: --message needs a value\n/);
    const command = await swarmInProcess(["stp", "a_1"], env);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /^swarm: unknown command "stp"; did you mean swarm stop\?\n/);
    const help = await swarmInProcess(["--help"], env);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Exit codes: 0 ok/);
    // The bridge owns stdio once started, so its help is answered before it starts.
    const mcpHelp = await swarm(["mcp", "--help"], env);
    assert.equal(mcpHelp.code, 0);
    assert.match(mcpHelp.stdout, /^usage: swarm mcp \[--url URL\]/);
  });

  it("exits 3 naming SWARM_URL when nothing listens there, and 2 when it is not a URL", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const down = await swarm(["tree", "r_1"], { ...env, SWARM_URL: url });
    assert.equal(down.code, 3);
    assert.match(down.stderr, new RegExp(`Cannot reach swarmd at ${url} \\(SWARM_URL\\): ECONNREFUSED`));
    const typo = await swarmInProcess(["tree", "r_1"], { ...env, SWARM_URL: "localhost4600" });
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /SWARM_URL/);
  });

  it("run → result → tree: the final tree once the run has ended, in text and --json", async () => {
    const run = await swarm(["run", file("family.json", FAMILY_SPEC), "--prompt", "go", "--json"], env);
    assert.equal(run.code, 0, run.stderr);
    const created = json(run.stdout);
    assert.match(created.runId, /^r_[0-9a-f]+$/);
    assert.equal(created.state, "provisioning");

    const result = await swarmInProcess(["result", created.rootAgentId, "--wait", "60"], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "spawned both\n");

    // Not a terminal: nothing is drawn until every agent has ended, then the tree, once.
    // Scripted agents answer through the model gateway, so every agent has spent something.
    const tree = await swarm(["tree", created.runId], env);
    assert.equal(tree.code, 0, tree.stderr);
    const lines = tree.stdout.trimEnd().split("\n");
    assert.match(lines[0] ?? "", new RegExp(`^run ${created.runId} · 3 agents · ended · ${SPENT} · seq \\d+$`));
    assert.match(lines[1] ?? "", new RegExp(`^✓ root ${created.rootAgentId} done success · ${SPENT}$`));
    assert.match(lines[2] ?? "", new RegExp(`^├─ ✓ kid-a a_[0-9a-f]+ done success · ${SPENT}$`));
    assert.match(lines[3] ?? "", new RegExp(`^└─ ✓ kid-b a_[0-9a-f]+ done success · ${SPENT}$`));
    assert.equal(lines.length, 4);

    const treeJson = json((await swarm(["tree", created.runId, "--json"], env)).stdout);
    assert.equal(treeJson.over, true);
    assert.deepEqual(
      treeJson.agents.map((a: Json) => [a.specName, a.depth, a.state, a.outcome]),
      [
        ["root", 0, "done", "success"],
        ["kid-a", 1, "done", "success"],
        ["kid-b", 1, "done", "success"],
      ],
    );
    assert.deepEqual(treeJson.agents[0].children, [treeJson.agents[1].agentId, treeJson.agents[2].agentId]);
    const snapshot = (await d.call("GET", `/runs/${created.runId}`)).body;
    assert.deepEqual(treeJson.usage, snapshot.usage);
    assert.deepEqual(treeJson.agents[0].subtreeUsage, snapshot.usage, "the root's subtree is the whole run");
    assert.ok(
      treeJson.agents.every((a: Json) => a.usage.calls >= 1 && a.usage.costUsd > 0),
      "each agent made its own calls",
    );
    assert.equal(
      treeJson.agents.reduce((n: number, a: Json) => n + a.usage.calls, 0),
      snapshot.usage.calls,
    );

    const kid = await swarmInProcess(["result", treeJson.agents[2].agentId, "--json"], env);
    assert.equal(kid.code, 0);
    assert.deepEqual(json(kid.stdout), {
      agentId: treeJson.agents[2].agentId,
      state: "settled",
      outcome: "success",
      resultRef: `fs://${treeJson.agents[2].agentId}/result.md`,
      result: "hello from b",
    });
  });

  it("events: the persisted events in seq order, --after skips, --follow ends with the run", async () => {
    const created = json(
      (await swarmInProcess(["run", file("echo.json", { name: "echo", script: [] }), "--prompt", "hi", "--json"], env))
        .stdout,
    );
    const all = await swarm(["events", created.runId, "--follow", "--json"], env);
    assert.equal(all.code, 0, all.stderr);
    const events = all.stdout.trimEnd().split("\n").map(json);
    assert.deepEqual(
      events.map((e: Json) => e.seq),
      events.map((_: Json, i: number) => i + 1),
      "gap-free seqs from 1",
    );
    assert.deepEqual(
      events.slice(0, 2).map((e: Json) => e.type),
      ["run_started", "agent_spawned"],
    );
    assert.equal(events.at(-1).type, "agent_ended");
    assert.equal(events.at(-1).data.outcome, "success");
    assert.ok(events.some((e: Json) => e.type === "handle_settled" && e.agentId === created.rootAgentId));

    const later = await swarm(["events", created.runId, "--after", "3", "--json"], env);
    assert.equal(later.code, 0);
    const tail = later.stdout.trimEnd().split("\n").map(json);
    assert.equal(tail[0].seq, 4);
    assert.deepEqual(tail, events.slice(3));

    const text = await swarmInProcess(["events", created.runId, "--after", String(events.length - 1)], env);
    assert.match(
      text.stdout,
      new RegExp(`^\\s+${events.length}  agent_ended\\s+${created.rootAgentId} \\{"outcome":"success"`),
    );
    const none = await swarmInProcess(["events", created.runId, "--after", String(events.length)], env);
    assert.equal(none.code, 0);
    assert.equal(none.stdout, "");
    const unknown = await swarmInProcess(["events", "r_00", "--json"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^swarm: service error 404: run r_00 does not exist\n$/);
  });

  it("pause, resume, steer and stop with --subtree: one result per agent, 409 as exit 1", async () => {
    const fam = await liveFamily();
    const paused = await swarm(["pause", fam.root, "--subtree", "--json"], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.deepEqual(json(paused.stdout).results, [
      { agentId: fam.root, outcome: "applied" },
      { agentId: fam.child, outcome: "applied" },
    ]);
    assert.equal((await d.call("GET", `/agents/${fam.child}`)).body.state, "paused");
    const steered = await swarmInProcess(["steer", fam.root, "re-plan", "please"], env);
    assert.equal(steered.code, 0, steered.stderr);
    assert.equal(steered.stdout, `${fam.root} steered: queued until it runs (it is paused or not yet running)\n`);
    const resumed = await swarmInProcess(["resume", fam.root, "--subtree"], env);
    assert.equal(resumed.code, 0);
    assert.equal(
      resumed.stdout,
      `${fam.child} resumed\n${fam.root} resumed\nresumed 2 agents\n`,
      "children first, then the count",
    );
    const stopped = await swarmInProcess(["stop", fam.child, "--json"], env);
    assert.deepEqual(json(stopped.stdout), { results: [{ agentId: fam.child, outcome: "applied" }] });
    const again = await swarmInProcess(["pause", fam.child], env);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `swarm: ${fam.child} already ended (aborted): nothing to pause\n`);
    const badMode = await swarmInProcess(["stop", fam.root, "--mode", "gently"], env);
    assert.equal(badMode.code, 2);
    await swarmInProcess(["stop", fam.root, "--subtree"], env);
  });

  it("budget: sets absolute caps and prints them, shows them without caps; a cap above the parent's remaining is the service's 409, exit 1; bad flags exit 2", async () => {
    const run = await swarmInProcess(
      ["run", file("lead.json", { name: "lead", script: [] }), "--keep-alive", "--max-tokens", "100000", "--json"],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const { runId, rootAgentId: root } = json(run.stdout);
    await waitForState(d, root, "running");
    const kid = (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: root,
        spec: { name: "kid", script: [] },
        keepAlive: true,
      })
    ).body.agentId;

    const shown = await swarmInProcess(["budget", kid], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      new RegExp(
        `^budget of ${kid}:\n  maxTokens +100000 +\\(100000 left\\)\n  maxCostUsd +none +\\(no limit\\)\n  spent +0 tok \\$0 in 0 calls \\(it and its descendants\\)\n$`,
      ),
      "a child's cap is what its parent had left",
    );

    const set = await swarmInProcess(["budget", kid, "--max-tokens", "5000", "--max-cost-usd", "0.25"], env);
    assert.equal(set.code, 0, set.stderr);
    assert.match(
      set.stdout,
      new RegExp(
        `^budget of ${kid}:\n  maxTokens +5000 +\\(5000 left\\)\n  maxCostUsd +\\$0\\.25 +\\(\\$0\\.25 left\\)\n$`,
      ),
    );
    assert.deepEqual((await d.call("GET", `/agents/${kid}`)).body.budget, {
      maxTokens: 5000,
      maxCostUsd: 0.25,
      remainingTokens: 5000,
      remainingCostUsd: 0.25,
    });
    const rootSet = await swarmInProcess(["budget", root, "--max-cost-usd", "2", "--json"], env);
    assert.deepEqual(json(rootSet.stdout), {
      agentId: root,
      budget: { maxTokens: 100000, maxCostUsd: 2, remainingTokens: 100000, remainingCostUsd: 2 },
    });
    assert.match(
      (await swarmInProcess(["budget", kid], env)).stdout,
      /maxCostUsd +\$0\.25 +\(\$0\.25 left\)/,
      "a parent's raise leaves the child's own cap",
    );

    // The real bin, for its exit code: the service's own message, as a direct call gets it.
    const over = await swarm(["budget", kid, "--max-tokens", "100001"], env);
    const direct = await d.call("POST", `/agents/${kid}/budget`, { maxTokens: 100001 });
    assert.equal(direct.status, 409);
    assert.match(direct.body.error, /more tokens than its parent has left \(100000\)/);
    assert.equal(over.code, 1);
    assert.equal(over.stderr, `swarm: service error 409: ${direct.body.error}\n`);
    assert.equal(over.stdout, "");
    assert.equal((await d.call("GET", `/agents/${kid}`)).body.budget.maxTokens, 5000, "a refused cap changes nothing");

    for (const [args, problem] of [
      [
        ["budget", kid, "--max-tokens", "1.5"],
        /^swarm: --max-tokens must be a whole number of tokens, not "1\.5"\nusage: swarm budget <agentId>/,
      ],
      [["budget", kid, "--max-cost-usd", "cheap"], /^swarm: --max-cost-usd must be a number of dollars/],
      [["budget", kid, "--max-cost-usd=-1"], /--max-cost-usd must be a number of dollars up to 1000000000, not "-1"/],
      [["budget", kid, "--max-tokenz", "5"], /^swarm: unknown option --max-tokenz; did you mean --max-tokens\?\n/],
      [["budget", "--max-tokens", "5"], /missing <agentId>/],
      [
        ["run", file("lead2.json", { name: "lead", script: [] }), "--max-tokens", "lots"],
        /--max-tokens must be a whole number/,
      ],
    ] as const) {
      const bad = await swarmInProcess([...args], env);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
      assert.match(bad.stderr, problem);
    }
    const unknown = await swarmInProcess(["budget", "a_0000000000000000", "--max-tokens", "1"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^swarm: service error 404: /);
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("an agent out of budget: paused (by budget) in the tree with its spend; raising resumes nothing, a resume finishes the turn", async () => {
    const spec = {
      name: "spender",
      script: [{ tool: "bash", args: { command: "echo one" } }, { text: "done: {{lastToolResult}}" }],
    };
    const run = await swarm(
      ["run", file("spender.json", spec), "--prompt", "go", "--max-tokens", "500", "--json"],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const { runId, rootAgentId: root } = json(run.stdout);
    await waitForState(d, root, "paused");
    const paused = (await d.call("GET", `/agents/${root}`)).body;
    assert.equal(paused.pausedBy, "budget");
    const spent =
      `${compactTokens(totalTokens(paused.subtreeUsage))} tok ${compactUsd(paused.subtreeUsage.costUsd)}`.replace(
        "$",
        "\\$",
      );

    const tree = await swarmInProcess(["tree", runId, "--once"], env);
    assert.equal(tree.code, 0, tree.stderr);
    assert.match(
      tree.stdout,
      new RegExp(
        `^run ${runId} · 1 agent · 1 live · ${spent} · seq \\d+\n‖ spender ${root} paused \\(by budget\\) · ${spent}\n$`,
      ),
    );
    assert.equal(
      json((await swarmInProcess(["tree", runId, "--once", "--json"], env)).stdout).agents[0].pausedBy,
      "budget",
    );
    assert.match((await swarmInProcess(["budget", root], env)).stdout, /maxTokens +500 +\(0 left\)/);

    const raised = await swarmInProcess(["budget", root, "--max-tokens", "1000000"], env);
    assert.equal(raised.code, 0, raised.stderr);
    assert.match(
      raised.stdout,
      new RegExp(`maxTokens +1000000 +\\(${1_000_000 - totalTokens(paused.subtreeUsage)} left\\)`),
    );
    assert.equal((await d.call("GET", `/agents/${root}`)).body.state, "paused", "raising a cap resumes nothing");
    assert.equal((await swarmInProcess(["resume", root], env)).stdout, `${root} resumed\n`);
    const result = await swarmInProcess(["result", root, "--wait", "60"], env);
    assert.equal(result.stdout, "done: one\n", result.stderr);
  });

  it("result: exit 4 while pending, the text once settled", async () => {
    const created = (await d.call("POST", "/runs", { spec: { name: "idle", script: [] } })).body;
    const pending = await swarm(["result", created.rootAgentId, "--json"], env);
    assert.equal(pending.code, 4);
    assert.deepEqual(json(pending.stdout), {
      agentId: created.rootAgentId,
      state: "pending",
      outcome: null,
      resultRef: null,
      result: null,
    });
    const quiet = await swarmInProcess(["result", created.rootAgentId], env);
    assert.equal(quiet.code, 4);
    assert.equal(quiet.stdout, "");
    assert.match(quiet.stderr, /still pending/);
    await d.call("DELETE", `/runs/${created.runId}`);
    const missing = await swarmInProcess(["result", "a_0"], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /404/);
  });

  it("specs add, list and rm; run takes a saved spec's name; the service's 400 is exit 1", async () => {
    const add = await swarm(
      ["specs", "add", file("echo-spec.json", { name: "echoer", script: [] }), "--name", "my-echo", "--json"],
      env,
    );
    assert.equal(add.code, 0, add.stderr);
    assert.deepEqual(json(add.stdout), { name: "my-echo", file: join(dir, "specs", "my-echo.json"), replaced: false });
    const list = json((await swarmInProcess(["specs", "list", "--json"], env)).stdout);
    assert.deepEqual(
      list.specs.map((s: Json) => [s.name, s.spec.name]),
      [["my-echo", "echoer"]],
    );
    assert.match((await swarmInProcess(["specs", "list"], env)).stdout, /^my-echo\s+script \(0 steps\)\n$/);

    const run = await swarmInProcess(["run", "my-echo", "--prompt", "from a saved spec", "--json"], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      (await swarmInProcess(["result", json(run.stdout).rootAgentId, "--wait", "60"], env)).stdout,
      "from a saved spec\n",
    );

    const invalid = await swarmInProcess(["specs", "add", file("bad-spec.json", { name: "x" })], env);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /exactly one of model or script/);
    const rejected = await swarm(["run", file("bad-run.json", { name: "x", script: [], colour: "red" })], env);
    assert.equal(rejected.code, 1);
    assert.match(rejected.stderr, /service error 400: body\.spec\.colour: unknown field/);
    const notJson = await swarmInProcess(["run", file("broken.json", "{nope")], env);
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /not valid JSON/);
    const unsaved = await swarmInProcess(["run", "no-such-spec"], env);
    assert.equal(unsaved.code, 2);
    assert.match(
      unsaved.stderr,
      /^swarm: no-such-spec is neither a file nor a saved spec \(swarm specs list\): No saved spec named "no-such-spec"/,
    );
    for (const missing of ["missing.json", join(dir, "nowhere", "spec.json")]) {
      const absent = await swarm(["run", missing], env);
      assert.equal(absent.code, 2);
      assert.match(
        absent.stderr,
        new RegExp(`^swarm: ${missing.replaceAll(".", "\\.")} does not exist \\(no such file`),
      );
    }

    const rm = await swarmInProcess(["specs", "rm", "my-echo"], env);
    assert.equal(rm.code, 0);
    assert.equal(rm.stdout, "removed my-echo\n");
    assert.deepEqual(json((await swarmInProcess(["specs", "list", "--json"], env)).stdout).specs, []);
  });

  it("spawn: every field of the route as a flag; --wait-for leaves it spawning; an idempotency key returns the same child; prompt and delete", async () => {
    const fam = await liveFamily();
    const kid = file("kid.json", { name: "kid", script: [{ text: "kid says {{lastUserMessage}}" }] });
    const waiting = await swarm(
      ["spawn", fam.root, kid, "--wait-for", fam.child, "--prompt", "hello", "--max-tokens", "50000", "--keep-alive"],
      env,
    );
    assert.equal(waiting.code, 0, waiting.stderr);
    const [line, follow] = waiting.stdout.split("\n");
    const waiter = /^agent (a_[0-9a-f]+) spawned under /.exec(line ?? "")?.[1] ?? "";
    assert.equal(
      line,
      `agent ${waiter} spawned under ${fam.root} in run ${fam.runId}; it is spawning: it is forked once ${fam.child} settled or ended`,
    );
    assert.equal(follow, `follow it: swarm tree ${fam.runId}`);
    const view = (await d.call("GET", `/agents/${waiter}`)).body;
    assert.deepEqual([view.state, view.parentAgentId, view.budget.maxTokens], ["spawning", fam.root, 50000]);

    const once = await swarmInProcess(
      ["spawn", fam.root, kid, "--idempotency-key", "k-1", "--json", "--run", fam.runId],
      env,
    );
    const twice = await swarmInProcess(["spawn", fam.root, kid, "--idempotency-key", "k-1", "--json"], env);
    assert.equal(once.code, 0, once.stderr);
    assert.deepEqual(json(twice.stdout), json(once.stdout), "the retry returns the first child");
    assert.deepEqual(Object.keys(json(once.stdout)), ["runId", "agentId", "state"]);

    const prompted = await swarmInProcess(["prompt", json(once.stdout).agentId, "from", "the", "cli"], env);
    assert.equal(prompted.code, 0, prompted.stderr);
    assert.equal(
      (await swarmInProcess(["result", json(once.stdout).agentId, "--wait", "60"], env)).stdout,
      "kid says from the cli\n",
    );
    for (const [args, problem] of [
      [["spawn", fam.root], /^swarm: missing <spec\.json>\nusage: swarm spawn /],
      [["spawn", fam.root, kid, "--idempotency-key="], /--idempotency-key must be 1\.\.256 characters/],
      [["spawn", fam.root, kid, "--wait-four", "x"], /unknown option --wait-four; did you mean --wait-for\?/],
      [["prompt", fam.root], /^swarm: missing <text>/],
      [["delete"], /^swarm: missing <runId>/],
    ] as const) {
      const bad = await swarmInProcess([...args], env);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
      assert.match(bad.stderr, problem);
    }

    const deleted = await swarmInProcess(["delete", fam.runId, "--json"], env);
    assert.equal(deleted.code, 0, deleted.stderr);
    // The root, its kept child and the one waiting; the prompted kid ended after its turn.
    assert.deepEqual(json(deleted.stdout), { runId: fam.runId, stopped: 3, purged: false });
    const purged = await swarm(["delete", fam.runId, "--purge"], env);
    assert.deepEqual(
      [purged.code, purged.stdout],
      [
        0,
        `run ${fam.runId} already ended: nothing to stop; purged: its events, results and sandbox folders are gone\n`,
      ],
    );
    const gone = await swarmInProcess(["delete", fam.runId], env);
    assert.deepEqual([gone.code, gone.stderr], [1, `swarm: service error 404: run ${fam.runId} does not exist\n`]);
  });

  it("sends SWARM_TOKEN as a bearer token", async () => {
    const secured = await startDaemon({ token: "s3cret" });
    try {
      const created = (
        await secured.call("POST", "/runs", { spec: { name: "t", script: [] } }, { authorization: "Bearer s3cret" })
      ).body;
      const withToken = await swarm(["tree", created.runId, "--once", "--json"], {
        ...env,
        SWARM_URL: secured.url,
        SWARM_TOKEN: "s3cret",
      });
      assert.equal(withToken.code, 0, withToken.stderr);
      assert.equal(json(withToken.stdout).runId, created.runId);
      const without = await swarmInProcess(["tree", created.runId, "--once"], { ...env, SWARM_URL: secured.url });
      assert.equal(without.code, 1);
      assert.match(without.stderr, /service error 401/);
      await secured.call("DELETE", `/runs/${created.runId}`, undefined, { authorization: "Bearer s3cret" });
    } finally {
      await secured.stop();
    }
  });
});
