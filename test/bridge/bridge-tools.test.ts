import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { tempDir } from "../cli/helpers.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { type Bridge, startBridge } from "./bridge-client.ts";

/** One tool per route (spec 4.13), then the local ones. */
const TOOL_NAMES = [
  "swarm_create_run",
  "swarm_list_runs",
  "swarm_get_run",
  "swarm_delete_run",
  "swarm_watch_events",
  "swarm_spawn_agent",
  "swarm_get_agent",
  "swarm_get_machine",
  "swarm_set_budget",
  "swarm_prompt_agent",
  "swarm_steer_agent",
  "swarm_pause_agent",
  "swarm_resume_agent",
  "swarm_stop_agent",
  "swarm_get_result",
  "swarm_fork_agent",
  "swarm_get_changes",
  "swarm_adopt_changes",
  "swarm_wait_agents",
  "swarm_list_permissions",
  "swarm_resolve_permission",
  "swarm_list_models",
  "swarm_list_nodes",
  "swarm_start_service",
  "swarm_spec_add",
  "swarm_spec_list",
  "swarm_spec_remove",
] as const;

describe("tool bridge over stdio against a live daemon", () => {
  let d: Daemon;
  let bridge: Bridge;
  let dir: string;

  before(async () => {
    d = await startDaemon();
    dir = tempDir("swarm-bridge-");
    bridge = await startBridge({ SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") });
  });
  after(async () => {
    await bridge?.close();
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists one tool per route plus the local tools, each with a described input schema", async () => {
    const { tools } = await bridge.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    const byName = new Map(tools.map((t) => [t.name, t as Json]));
    for (const tool of tools) {
      assert.ok((tool.description ?? "").length > 40, `${tool.name} has a description`);
      assert.equal(tool.inputSchema.type, "object");
      for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
        assert.ok(typeof (schema as Json).description === "string", `${tool.name}.${field} is described`);
      }
    }
    const result = byName.get("swarm_get_result").inputSchema;
    assert.deepEqual(result.required, ["agentId"]);
    assert.deepEqual(
      { ...result.properties.waitSeconds, description: undefined },
      { type: "integer", minimum: 0, maximum: 240, default: 0, description: undefined },
    );
    const watch = byName.get("swarm_watch_events").inputSchema;
    assert.deepEqual(Object.keys(watch.properties).sort(), [
      "afterSeq",
      "includeEphemeral",
      "maxEvents",
      "maxWaitSeconds",
      "runId",
      "untilTypes",
    ]);
    assert.equal(watch.properties.maxWaitSeconds.maximum, 240);
    assert.deepEqual(watch.required, ["runId"]);
    const create = byName.get("swarm_create_run").inputSchema;
    assert.deepEqual(Object.keys(create.properties).sort(), ["budget", "keepAlive", "prompt", "spec", "specName"]);
    assert.equal(create.properties.spec.properties.name.pattern, "^[A-Za-z0-9._-]{1,64}$");
    assert.deepEqual(byName.get("swarm_stop_agent").inputSchema.properties.mode.enum, ["abort", "drain"]);
    assert.deepEqual(byName.get("swarm_pause_agent").inputSchema.properties.scope.enum, ["agent", "subtree"]);
    assert.deepEqual(Object.keys(create.properties.budget.properties).sort(), [
      "maxAgents",
      "maxCostUsd",
      "maxTokens",
      "spawnDepth",
    ]);
    const setBudget = byName.get("swarm_set_budget");
    assert.deepEqual(Object.keys(setBudget.inputSchema.properties).sort(), ["agentId", "maxCostUsd", "maxTokens"]);
    assert.deepEqual(setBudget.inputSchema.required, ["agentId"]);
    assert.deepEqual(
      [setBudget.inputSchema.properties.maxTokens.type, setBudget.inputSchema.properties.maxTokens.minimum],
      ["integer", 0],
    );
    assert.deepEqual(
      [setBudget.inputSchema.properties.maxCostUsd.type, setBudget.inputSchema.properties.maxCostUsd.minimum],
      ["number", 0],
    );
    assert.equal(setBudget.annotations.idempotentHint, true);
    for (const name of ["swarm_get_agent", "swarm_get_run"])
      assert.match(byName.get(name).description, /subtreeUsage/, `${name} tells of usage`);
    assert.match(byName.get("swarm_get_agent").description, /budget/);
    assert.match(
      byName.get("swarm_watch_events").description,
      /model_usage.*budget_changed|budget_changed.*model_usage/,
    );
    assert.equal(byName.get("swarm_get_run").annotations.readOnlyHint, true);
    assert.equal(byName.get("swarm_delete_run").annotations.destructiveHint, true);
    const del = byName.get("swarm_delete_run").inputSchema;
    assert.deepEqual([Object.keys(del.properties).sort(), del.required], [["purge", "runId"], ["runId"]]);
    assert.deepEqual([del.properties.purge.type, del.properties.purge.default], ["boolean", false]);

    const list = byName.get("swarm_list_permissions");
    assert.deepEqual(
      [list.inputSchema.required, list.inputSchema.properties.state.enum, list.inputSchema.properties.state.default],
      [["runId"], ["pending", "resolved", "all"], "pending"],
    );
    assert.equal(list.annotations.readOnlyHint, true);
    const resolve = byName.get("swarm_resolve_permission").inputSchema;
    assert.deepEqual(
      [Object.keys(resolve.properties).sort(), [...resolve.required].sort()],
      [
        ["agentId", "decision", "message", "requestId"],
        ["agentId", "decision", "requestId"],
      ],
    );
    assert.deepEqual(
      [resolve.properties.decision.enum, resolve.properties.message.minLength, resolve.properties.message.maxLength],
      [["allow", "deny"], 1, 10_000],
    );
    const stop = byName.get("swarm_stop_agent").inputSchema.properties;
    assert.deepEqual(
      [stop.drainTimeoutMs.type, stop.drainTimeoutMs.minimum, stop.drainTimeoutMs.maximum],
      ["integer", 1_000, 86_400_000],
    );
    assert.match(
      stop.mode.description,
      /waits for the running turn, then ends the agent as done; aborted at the deadline/,
    );
    assert.match(
      byName.get("swarm_watch_events").description,
      /permission_request.*permission_resolved.*agent_draining/,
    );
    const runs = byName.get("swarm_list_runs");
    assert.deepEqual([runs.inputSchema.required, Object.keys(runs.inputSchema.properties)], [undefined, ["limit"]]);
    const { limit } = runs.inputSchema.properties;
    assert.deepEqual([limit.type, limit.minimum, limit.maximum, limit.default], ["integer", 1, 1_000, 100]);
    const machine = byName.get("swarm_get_machine");
    assert.deepEqual(
      [machine.inputSchema.required, Object.keys(machine.inputSchema.properties)],
      [["agentId"], ["agentId"]],
    );
    for (const tool of [runs, machine]) assert.equal(tool.annotations.readOnlyHint, true, tool.name);
  });

  it("drives a run through every route tool and reads back what the service says", async () => {
    const created = await bridge.tool("swarm_create_run", {
      spec: { name: "root", script: [] },
      prompt: "hello bridge",
      keepAlive: true,
    });
    assert.equal(created.isError, false, created.text);
    assert.match(created.text, /^Run r_[0-9a-f]+ created; root agent a_[0-9a-f]+ is provisioning\./);
    const { runId, rootAgentId: root } = created.data;

    const rootResult = await bridge.tool("swarm_get_result", { agentId: root, waitSeconds: 60 });
    assert.deepEqual(rootResult.data, {
      agentId: root,
      state: "settled",
      outcome: "success",
      resultRef: `fs://${root}/result.md`,
      result: "hello bridge",
    });

    const spawned = await bridge.tool("swarm_spawn_agent", {
      runId,
      parentAgentId: root,
      spec: { name: "kid", script: [] },
      prompt: "kid task",
      keepAlive: true,
    });
    assert.equal(spawned.isError, false, spawned.text);
    assert.equal(spawned.data.state, "provisioning");
    const kid = spawned.data.agentId;
    assert.equal((await bridge.tool("swarm_get_result", { agentId: kid, waitSeconds: 60 })).data.result, "kid task");
    await waitForState(d, kid, "running");

    const agent = await bridge.tool("swarm_get_agent", { agentId: kid });
    assert.equal(agent.data.parentAgentId, root);
    assert.equal(agent.data.depth, 1);
    assert.equal(agent.data.specName, "kid");
    assert.equal(agent.data.state, "running");
    // Each scripted answer went through the model gateway and was metered.
    assert.equal(agent.data.usage.calls, 1);
    assert.ok(agent.data.usage.inputTokens > 0 && agent.data.usage.costUsd > 0);
    assert.deepEqual(agent.data.subtreeUsage, agent.data.usage, "a leaf's subtree is itself");
    assert.deepEqual(agent.data.budget, {
      maxTokens: null,
      maxCostUsd: null,
      remainingTokens: null,
      remainingCostUsd: null,
    });
    assert.equal(agent.data.toolErrors, 0);
    assert.match(agent.text, / is running; its subtree spent \d+ tokens, \$[\d.]+ in 1 model call\(s\)\.$/m);
    const tree = await bridge.tool("swarm_get_run", { runId });
    assert.deepEqual(
      tree.data.agents.map((a: Json) => [a.agentId, a.state]),
      [
        [root, "running"],
        [kid, "running"],
      ],
    );
    assert.match(tree.text, /2 agent\(s\), 2 live, \d+ tokens, \$[\d.]+ in 2 model call\(s\)/);
    assert.equal(tree.data.usage.calls, 2);
    assert.deepEqual(tree.data.agents[0].subtreeUsage, tree.data.usage, "the root's subtree is the whole run");
    assert.deepEqual(tree.data.agents[1].usage, agent.data.usage);

    const before = tree.data.asOf;
    const prompted = await bridge.tool("swarm_prompt_agent", { agentId: kid, text: "second task" });
    assert.deepEqual(prompted.data, { agentId: kid, accepted: true });
    const settled = await bridge.tool("swarm_watch_events", {
      runId,
      afterSeq: before,
      untilTypes: ["handle_settled"],
      maxWaitSeconds: 60,
    });
    assert.equal(settled.data.stoppedBy, "until-type");
    assert.deepEqual(settled.data.events.at(-1).type, "handle_settled");
    assert.equal(settled.data.events.at(-1).agentId, kid);
    assert.ok(settled.data.events.every((e: Json) => e.seq > before && e.seq !== null));
    assert.equal((await bridge.tool("swarm_get_result", { agentId: kid })).data.result, "second task");

    const paused = await bridge.tool("swarm_pause_agent", { agentId: root, scope: "subtree" });
    assert.deepEqual(paused.data.results, [
      { agentId: root, outcome: "applied" },
      { agentId: kid, outcome: "applied" },
    ]);
    assert.equal((await bridge.tool("swarm_get_agent", { agentId: kid })).data.state, "paused");
    const steered = await bridge.tool("swarm_steer_agent", { agentId: root, message: "new plan", scope: "subtree" });
    assert.equal(steered.data.delivery, "queued");
    assert.match(steered.text, /delivered to a_[0-9a-f]+ as "queued"/);
    const resumed = await bridge.tool("swarm_resume_agent", { agentId: root, scope: "subtree" });
    assert.deepEqual(
      resumed.data.results.map((r: Json) => r.agentId),
      [kid, root],
      "children first",
    );
    const stopped = await bridge.tool("swarm_stop_agent", { agentId: kid });
    assert.deepEqual(stopped.data.results, [{ agentId: kid, outcome: "applied" }]);
    assert.equal((await bridge.tool("swarm_get_agent", { agentId: kid })).data.outcome, "aborted");

    // The steer queued while the root was paused runs as a turn after the resume: wait for it to
    // settle, so the ledger is quiet before it is read whole.
    let after = settled.data.lastSeq;
    for (let rootSettled = false; !rootSettled; ) {
      const window = await bridge.tool("swarm_watch_events", { runId, afterSeq: after, maxWaitSeconds: 60 });
      assert.notEqual(window.data.events.length, 0, "the root's steered turn settles");
      rootSettled = window.data.events.some((e: Json) => e.type === "handle_settled" && e.agentId === root);
      after = window.data.lastSeq;
    }

    // The whole ledger so far, in seq order, then a window with nothing new, then a bounded one.
    const all = await bridge.tool("swarm_watch_events", { runId, maxWaitSeconds: 0, maxEvents: 1000 });
    const seqs = all.data.events.map((e: Json) => e.seq);
    assert.deepEqual(
      seqs,
      seqs.map((_: number, i: number) => i + 1),
    );
    assert.equal(all.data.events[0].type, "run_started");
    assert.equal(all.data.stoppedBy, "caught-up");
    assert.equal(all.data.lastSeq, seqs.at(-1));
    assert.equal(all.data.runOver, false);
    const quiet = await bridge.tool("swarm_watch_events", { runId, afterSeq: all.data.lastSeq, maxWaitSeconds: 1 });
    assert.deepEqual([quiet.data.events, quiet.data.stoppedBy, quiet.data.lastSeq], [[], "max-wait", all.data.lastSeq]);
    const two = await bridge.tool("swarm_watch_events", { runId, maxEvents: 2 });
    assert.deepEqual(
      [two.data.events.map((e: Json) => e.seq), two.data.stoppedBy, two.data.lastSeq],
      [[1, 2], "max-events", 2],
    );

    const deleted = await bridge.tool("swarm_delete_run", { runId });
    assert.deepEqual(deleted.data, { runId, deleted: true });
    assert.equal((await bridge.tool("swarm_get_agent", { agentId: root })).data.state, "aborted");
    const end = await bridge.tool("swarm_watch_events", { runId, afterSeq: all.data.lastSeq, maxWaitSeconds: 60 });
    assert.equal(end.data.stoppedBy, "run-over");
    assert.equal(end.data.runOver, true);
    assert.ok(
      end.data.events.some((e: Json) => e.type === "agent_ended" && e.agentId === root && e.data.outcome === "aborted"),
    );
  });

  it("swarm_list_runs lists runs newest first with their agents counted by state; swarm_get_machine shows an agent's state, tags and transitions", async () => {
    const older = await bridge.tool("swarm_create_run", { spec: { name: "older", script: [] }, prompt: "one" });
    assert.equal(
      (await bridge.tool("swarm_get_result", { agentId: older.data.rootAgentId, waitSeconds: 60 })).data.result,
      "one",
    );
    await waitForState(d, older.data.rootAgentId, "done");
    const newer = await bridge.tool("swarm_create_run", {
      spec: { name: "newer", script: [] },
      prompt: "two",
      keepAlive: true,
    });
    const root = newer.data.rootAgentId;
    assert.equal((await bridge.tool("swarm_get_result", { agentId: root, waitSeconds: 60 })).data.result, "two");

    const listed = await bridge.tool("swarm_list_runs", { limit: 2 });
    assert.equal(listed.isError, false, listed.text);
    assert.deepEqual(
      listed.data.runs.map((r: Json) => [
        r.runId,
        r.rootAgentId,
        r.specName,
        r.agents,
        r.live,
        r.states.running,
        r.states.done,
        r.usage.calls,
      ]),
      [
        [newer.data.runId, root, "newer", 1, 1, 1, 0, 1],
        [older.data.runId, older.data.rootAgentId, "older", 1, 0, 0, 1, 1],
      ],
    );
    assert.equal(
      listed.text.split("\n")[0],
      `2 run(s), newest first: ${newer.data.runId} (newer, 1 of 1 agent(s) live), ${older.data.runId} (older, 0 of 1 agent(s) live).`,
    );
    const all = await bridge.tool("swarm_list_runs");
    assert.deepEqual(all.data.runs.slice(0, 2), listed.data.runs, "limit keeps the newest");
    assert.ok(all.data.runs.length > 2, "runs of earlier tests too");
    for (const limit of [0, 1_001, 1.5]) {
      const bad = await bridge.tool("swarm_list_runs", { limit });
      assert.equal(bad.isError, true, String(limit));
      assert.match(bad.text, /limit/);
    }

    const machine = await bridge.tool("swarm_get_machine", { agentId: root });
    assert.equal(machine.isError, false, machine.text);
    assert.deepEqual(
      [machine.data.agentId, machine.data.running, machine.data.value, machine.data.tags],
      [root, true, { live: { running: { idle: "awake" } } }, ["live", "running"]],
    );
    const values = machine.data.transitions.map((t: Json) => JSON.stringify(t.value));
    assert.equal(values[0], JSON.stringify({ unforked: "provisioning" }));
    assert.equal(values.at(-1), JSON.stringify({ live: { running: { idle: "awake" } } }));
    assert.match(
      machine.text,
      new RegExp(
        `^The machine of ${root} is in \\{"live":\\{"running":\\{"idle":"awake"\\}\\}\\} \\(tags: live, running\\); ${values.length} transition\\(s\\) recorded\\.\n`,
      ),
    );
    await bridge.tool("swarm_pause_agent", { agentId: root });
    assert.deepEqual((await bridge.tool("swarm_get_machine", { agentId: root })).data.value, { live: "paused" });

    const direct = await d.call("GET", "/agents/a_00ff/machine");
    const unknown = await bridge.tool("swarm_get_machine", { agentId: "a_00ff" });
    assert.deepEqual([unknown.isError, unknown.data], [true, { error: direct.body.error, status: 404 }]);
    await bridge.tool("swarm_delete_run", { runId: newer.data.runId });
  });

  it("swarm_list_permissions and swarm_resolve_permission: a held call waits for allow; a deny fails it with its message; a second answer is a 409", async () => {
    const held = async (name: string) => {
      const spec = {
        name,
        approve: [{ tool: "bash" }],
        script: [{ tool: "bash", args: { command: "echo hi" } }, { text: "done: {{lastToolResult}}" }],
      };
      const created = await bridge.tool("swarm_create_run", { spec, prompt: "go", keepAlive: true });
      assert.equal(created.isError, false, created.text);
      const { runId, rootAgentId: root } = created.data;
      const asked = await bridge.tool("swarm_watch_events", {
        runId,
        untilTypes: ["permission_request"],
        maxWaitSeconds: 60,
      });
      assert.equal(asked.data.stoppedBy, "until-type", asked.text);
      return { runId, root, requestId: asked.data.events.at(-1).data.requestId };
    };
    const first = await held("careful");
    const listed = await bridge.tool("swarm_list_permissions", { runId: first.runId });
    assert.equal(listed.isError, false, listed.text);
    assert.deepEqual(
      listed.data.permissions.map((p: Json) => [p.requestId, p.agentId, p.tool, p.args.command, p.state]),
      [[first.requestId, first.root, "bash", "echo hi", "pending"]],
    );
    assert.match(
      listed.text,
      new RegExp(
        `^1 pending approval request\\(s\\) in ${first.runId}: ${first.requestId} \\(${first.root} bash\\)\\.\n`,
      ),
    );
    assert.deepEqual((await bridge.tool("swarm_get_agent", { agentId: first.root })).data.pendingPermissions, [
      first.requestId,
    ]);
    const allowed = await bridge.tool("swarm_resolve_permission", {
      agentId: first.root,
      requestId: first.requestId,
      decision: "allow",
    });
    assert.equal(allowed.isError, false, allowed.text);
    assert.deepEqual(
      [allowed.data.requestId, allowed.data.state, allowed.data.decision, allowed.data.by],
      [first.requestId, "resolved", "allow", "operator"],
    );
    assert.match(allowed.text, new RegExp(`^Allowed: bash call of ${first.root} \\(request ${first.requestId}\\)\\.`));
    assert.equal(
      (await bridge.tool("swarm_get_result", { agentId: first.root, waitSeconds: 60 })).data.result,
      "done: hi\n",
      "echo's output",
    );
    const again = await bridge.tool("swarm_resolve_permission", {
      agentId: first.root,
      requestId: first.requestId,
      decision: "deny",
    });
    assert.deepEqual([again.isError, again.data.status], [true, 409]);
    assert.deepEqual((await bridge.tool("swarm_list_permissions", { runId: first.runId })).data.permissions, []);

    const second = await held("refused");
    const denied = await bridge.tool("swarm_resolve_permission", {
      agentId: second.root,
      requestId: second.requestId,
      decision: "deny",
      message: "no",
    });
    assert.equal(denied.isError, false, denied.text);
    assert.deepEqual([denied.data.decision, denied.data.message, denied.data.by], ["deny", "no", "operator"]);
    assert.match(denied.text, /^Denied \("no"\): bash call of /);
    const result = (await bridge.tool("swarm_get_result", { agentId: second.root, waitSeconds: 60 })).data.result;
    assert.match(result, /^done: .*\bno\b/s);
    assert.doesNotMatch(result, /\bhi\b/, "the command did not run");
    const refusedAgent = await bridge.tool("swarm_get_agent", { agentId: second.root });
    assert.equal(refusedAgent.data.toolErrors, 1, "the denial is counted");
    assert.match(refusedAgent.text, /; swarmd refused 1 of its tool call\(s\); its subtree spent /);
    const all = await bridge.tool("swarm_list_permissions", { runId: second.runId, state: "all" });
    assert.deepEqual(
      all.data.permissions.map((p: Json) => [p.requestId, p.decision, p.by, p.message]),
      [[second.requestId, "deny", "operator", "no"]],
    );

    const unknown = await bridge.tool("swarm_resolve_permission", {
      agentId: first.root,
      requestId: "p_0000",
      decision: "allow",
    });
    assert.deepEqual([unknown.isError, unknown.data.status], [true, 404]);
    assert.equal((await bridge.tool("swarm_list_permissions", { runId: "r_00" })).data.status, 404);
    for (const bad of [
      { decision: "maybe" },
      { decision: "deny", message: "" },
      { decision: "deny", message: "x".repeat(10_001) },
    ]) {
      const answer = await bridge.tool("swarm_resolve_permission", {
        agentId: second.root,
        requestId: second.requestId,
        ...bad,
      });
      assert.equal(answer.isError, true, JSON.stringify(bad).slice(0, 60));
      assert.match(answer.text, /decision|message/);
    }
    assert.equal((await bridge.tool("swarm_list_permissions", { runId: second.runId, state: "open" })).isError, true);
    await bridge.tool("swarm_delete_run", { runId: first.runId });
    await bridge.tool("swarm_delete_run", { runId: second.runId });
  });

  it("swarm_stop_agent mode drain ends an idle keepAlive root as done (reason drained); drainTimeoutMs with mode abort is refused", async () => {
    const created = await bridge.tool("swarm_create_run", { spec: { name: "idle", script: [] }, keepAlive: true });
    const { runId, rootAgentId: root } = created.data;
    await waitForState(d, root, "running");
    const refused = await bridge.tool("swarm_stop_agent", { agentId: root, drainTimeoutMs: 5_000 });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /drainTimeoutMs is only for mode "drain"/);
    assert.equal(
      (await bridge.tool("swarm_get_agent", { agentId: root })).data.state,
      "running",
      "a refused stop stops nothing",
    );

    const drained = await bridge.tool("swarm_stop_agent", { agentId: root, mode: "drain", drainTimeoutMs: 60_000 });
    assert.equal(drained.isError, false, drained.text);
    assert.deepEqual([drained.data.mode, drained.data.results], ["drain", [{ agentId: root, outcome: "applied" }]]);
    assert.match(drained.text, new RegExp(`^Drain ${root}: 1 applied\\.`));
    const end = await bridge.tool("swarm_watch_events", { runId, untilTypes: ["agent_ended"], maxWaitSeconds: 60 });
    const ended = end.data.events.at(-1);
    assert.deepEqual([ended.type, ended.agentId, ended.data.reason], ["agent_ended", root, "drained"]);
    // Idle, it ended on the spot: no drain was left to record, its end says drained.
    assert.equal(
      end.data.events.find((e: Json) => e.type === "agent_draining"),
      undefined,
    );
    assert.equal((await bridge.tool("swarm_get_agent", { agentId: root })).data.state, "done");
  });

  it("swarm_delete_run with purge stops the run, then removes it: the service no longer knows it", async () => {
    const created = await bridge.tool("swarm_create_run", {
      spec: { name: "brief", script: [] },
      prompt: "hello",
      keepAlive: true,
    });
    const { runId, rootAgentId: root } = created.data;
    assert.equal((await bridge.tool("swarm_get_result", { agentId: root, waitSeconds: 60 })).data.result, "hello");
    const purged = await bridge.tool("swarm_delete_run", { runId, purge: true });
    assert.equal(purged.isError, false, purged.text);
    assert.deepEqual(purged.data, { runId, deleted: true, purged: true });
    assert.match(purged.text, /purged/);
    assert.equal((await bridge.tool("swarm_get_run", { runId })).data.status, 404);
    assert.equal((await bridge.tool("swarm_get_agent", { agentId: root })).data.status, 404);
    const again = await bridge.tool("swarm_delete_run", { runId, purge: true });
    assert.deepEqual([again.isError, again.data.status], [true, 404]);
  });

  it("returns service errors as tool errors with the service's status and message", async () => {
    // The service's own words, as a direct call gets them.
    const direct = await d.call("GET", "/agents/a_ffff");
    assert.equal(direct.status, 404);
    const missing = await bridge.tool("swarm_get_agent", { agentId: "a_ffff" });
    assert.equal(missing.isError, true);
    assert.equal(missing.text, `swarmd refused GET /agents/a_ffff with HTTP 404: ${direct.body.error}`);
    assert.deepEqual(missing.data, { error: direct.body.error, status: 404 });

    const created = await bridge.tool("swarm_create_run", { spec: { name: "short", script: [] }, prompt: "bye" });
    await bridge.tool("swarm_watch_events", {
      runId: created.data.runId,
      untilTypes: ["agent_ended"],
      maxWaitSeconds: 60,
    });
    const ended = await bridge.tool("swarm_prompt_agent", { agentId: created.data.rootAgentId, text: "again" });
    assert.equal(ended.isError, true);
    assert.equal(ended.data.status, 409);
    assert.match(ended.text, /HTTP 409: .*not live/);

    const badSpawn = await bridge.tool("swarm_spawn_agent", {
      runId: created.data.runId,
      parentAgentId: "a_0",
      spec: { name: "x", script: [] },
    });
    assert.equal(badSpawn.data.status, 404);
    const badSpec = await bridge.tool("swarm_create_run", { spec: { name: "has space", script: [] } });
    assert.equal(badSpec.isError, true);
    assert.match(badSpec.text, /name/);
    const both = await bridge.tool("swarm_create_run", { spec: { name: "x", script: [] }, specName: "x" });
    assert.deepEqual([both.isError, both.text], [true, "Give either spec or specName, not both."]);
    const tooLong = await bridge.tool("swarm_get_result", { agentId: created.data.rootAgentId, waitSeconds: 241 });
    assert.equal(tooLong.isError, true);
    assert.match(tooLong.text, /waitSeconds/);
  });

  it("swarm_set_budget sets absolute caps and answers with the budget; a cap above the parent's remaining is the service's 409; bad input is a tool error", async () => {
    const created = await bridge.tool("swarm_create_run", {
      spec: { name: "lead", script: [] },
      keepAlive: true,
      budget: { maxTokens: 100_000 },
    });
    assert.equal(created.isError, false, created.text);
    const { runId, rootAgentId: root } = created.data;
    await waitForState(d, root, "running");
    const kid = (
      await bridge.tool("swarm_spawn_agent", {
        runId,
        parentAgentId: root,
        spec: { name: "kid", script: [] },
        keepAlive: true,
        budget: { maxCostUsd: 1 },
      })
    ).data.agentId;
    assert.deepEqual(
      (await bridge.tool("swarm_get_agent", { agentId: kid })).data.budget,
      { maxTokens: 100_000, maxCostUsd: 1, remainingTokens: 100_000, remainingCostUsd: 1 },
      "spawn budget caps reach the service",
    );

    const set = await bridge.tool("swarm_set_budget", { agentId: kid, maxTokens: 5_000 });
    assert.equal(set.isError, false, set.text);
    assert.deepEqual(set.data, {
      agentId: kid,
      budget: { maxTokens: 5_000, maxCostUsd: 1, remainingTokens: 5_000, remainingCostUsd: 1 },
    });
    assert.match(
      set.text,
      new RegExp(`^Budget of ${kid} set: maxTokens 5000 \\(5000 left\\), maxCostUsd \\$1 \\(\\$1 left\\)\\.\n`),
    );
    const rootSet = await bridge.tool("swarm_set_budget", { agentId: root, maxCostUsd: 0.5 });
    assert.deepEqual(rootSet.data.budget, {
      maxTokens: 100_000,
      maxCostUsd: 0.5,
      remainingTokens: 100_000,
      remainingCostUsd: 0.5,
    });
    assert.equal(
      (await bridge.tool("swarm_get_agent", { agentId: kid })).data.budget.remainingCostUsd,
      0.5,
      "an ancestor's cap bounds what is left",
    );

    const direct = await d.call("POST", `/agents/${kid}/budget`, { maxTokens: 100_001 });
    assert.equal(direct.status, 409);
    const over = await bridge.tool("swarm_set_budget", { agentId: kid, maxTokens: 100_001 });
    assert.equal(over.isError, true);
    assert.equal(over.text, `swarmd refused POST /agents/${kid}/budget with HTTP 409: ${direct.body.error}`);
    assert.deepEqual(over.data, { error: direct.body.error, status: 409 });
    assert.equal(
      (await bridge.tool("swarm_get_agent", { agentId: kid })).data.budget.maxTokens,
      5_000,
      "a refused cap changes nothing",
    );

    const none = await bridge.tool("swarm_set_budget", { agentId: kid });
    assert.equal(none.isError, true);
    assert.match(none.text, /Give maxTokens, maxCostUsd or both/);
    for (const bad of [{ maxTokens: -1 }, { maxTokens: 1.5 }, { maxCostUsd: -0.01 }, { maxTokens: "lots" }]) {
      const answer = await bridge.tool("swarm_set_budget", { agentId: kid, ...bad });
      assert.equal(answer.isError, true, JSON.stringify(bad));
      assert.match(answer.text, new RegExp(Object.keys(bad)[0] ?? ""), JSON.stringify(bad));
    }
    const missing = await bridge.tool("swarm_set_budget", { agentId: "a_0000000000000000", maxTokens: 1 });
    assert.equal(missing.data.status, 404);
    await bridge.tool("swarm_delete_run", { runId });
  });

  it("saves, lists and removes specs, and runs a saved spec by name", async () => {
    const added = await bridge.tool("swarm_spec_add", { spec: { name: "echoer", script: [] }, name: "saved-echo" });
    assert.equal(added.isError, false, added.text);
    assert.deepEqual(
      [added.data.name, added.data.file, added.data.replaced],
      ["saved-echo", join(dir, "specs", "saved-echo.json"), false],
    );
    const listed = await bridge.tool("swarm_spec_list");
    assert.deepEqual(
      listed.data.specs.map((s: Json) => [s.name, s.spec]),
      [["saved-echo", { name: "echoer", script: [] }]],
    );
    const keep = await bridge.tool("swarm_spec_add", {
      spec: { name: "echoer", script: [] },
      name: "saved-echo",
      overwrite: false,
    });
    assert.equal(keep.isError, true);
    assert.match(keep.text, /already saved/);

    const run = await bridge.tool("swarm_create_run", { specName: "saved-echo", prompt: "from the cache" });
    assert.equal(run.isError, false, run.text);
    assert.equal(
      (await bridge.tool("swarm_get_result", { agentId: run.data.rootAgentId, waitSeconds: 60 })).data.result,
      "from the cache",
    );
    const spawnByName = await bridge.tool("swarm_spawn_agent", {
      runId: run.data.runId,
      parentAgentId: run.data.rootAgentId,
      specName: "nope",
    });
    assert.equal(spawnByName.isError, true);
    assert.match(spawnByName.text, /No saved spec named "nope"/);

    assert.deepEqual((await bridge.tool("swarm_spec_remove", { name: "saved-echo" })).data, {
      name: "saved-echo",
      removed: true,
    });
    assert.deepEqual((await bridge.tool("swarm_spec_list")).data.specs, []);
    assert.equal((await bridge.tool("swarm_create_run", { specName: "saved-echo" })).isError, true);
    assert.equal((await bridge.tool("swarm_spec_remove", { name: "../etc" })).isError, true);
  });

  it("reports progress while get_result waits, so a client's own timeout can be reset", async () => {
    const created = await bridge.tool("swarm_create_run", {
      spec: { name: "slow", script: [{ text: "late answer", delayMs: 6_000 }] },
      prompt: "go",
    });
    const progress: Json[] = [];
    const result = await bridge.tool(
      "swarm_get_result",
      { agentId: created.data.rootAgentId, waitSeconds: 60 },
      { onprogress: (p) => progress.push(p) },
    );
    assert.equal(result.data.result, "late answer");
    assert.ok(progress.length >= 1, "at least one progress notification");
    assert.equal(progress[0].total, 60);
  });
});
