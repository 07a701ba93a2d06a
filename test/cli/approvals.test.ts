import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { permissionTable } from "../../src/cli/permission-table.ts";
import { age } from "../../src/cli/table-format.ts";
import type { PermissionView } from "../../src/swarm-api.ts";
import { PERMISSION } from "../http/fakes.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { freePort } from "../support/daemon-process.ts";
import { openEvents } from "../support/sse-client.ts";
import { SPENT, swarm, swarmInProcess, tempDir } from "./helpers.ts";

// `swarm approvals`, `allow`, `deny` and `stop --mode drain`; the tree's side of them is in cli.test.ts.

describe("swarm approvals table", () => {
  const request = (requestId: string, agentId: string, args: Record<string, unknown>, at: number): PermissionView => ({
    ...PERMISSION,
    requestId,
    runId: "r_1",
    agentId,
    args,
    at,
  });

  it("one line per request: id, agent, tool, age and the arguments as one clipped line of JSON", () => {
    const long = { command: `cat <<EOF\n${"x".repeat(80)}\nEOF` };
    assert.deepEqual(
      permissionTable(
        [request("p_1", "a_1", { command: "echo hi" }, 100_000), request("p_22", "a_2", long, 40_000)],
        130_000,
      ),
      [
        "REQUEST  AGENT  TOOL  AGE  ARGS",
        'p_1      a_1    bash  30s  {"command":"echo hi"}',
        `p_22     a_2    bash  1m   {"command":"cat <<EOF\\n${"x".repeat(24)}…`,
      ],
    );
    assert.deepEqual(
      [age(-5), age(59_999), age(60_000), age(3_599_999), age(3_600_000), age(47 * 3_600_000), age(48 * 3_600_000)],
      ["0s", "59s", "1m", "59m", "1h", "47h", "2d"],
    );
  });

  it("adds decision, who decided and the message (on one line) once any listed request is resolved", () => {
    const denied: PermissionView = {
      ...request("p_1", "a_1", { command: "rm x" }, 100_000),
      state: "resolved",
      decision: "deny",
      by: "operator",
      message: "not on\nmain",
      resolvedAt: 120_000,
    };
    assert.deepEqual(permissionTable([denied, request("p_2", "a_1", { command: "ls" }, 125_000)], 130_000), [
      "REQUEST  AGENT  TOOL  AGE  DECISION  BY        ARGS                MESSAGE",
      'p_1      a_1    bash  30s  deny      operator  {"command":"rm x"}  not on main',
      'p_2      a_1    bash  5s   pending   -         {"command":"ls"}',
    ]);
  });
});

describe("swarm approvals, allow, deny and stop --mode drain: command-line errors", () => {
  it("exits 2 with the command's usage before calling the service; a valid line gets as far as the service", async () => {
    const env = { SWARM_URL: `http://127.0.0.1:${await freePort()}` };
    for (const [args, problem] of [
      [
        ["approvals"],
        /^swarm: missing <runId>\nusage: swarm approvals <runId> \[--state pending\|resolved\|all\] \[--json\]\n$/,
      ],
      [["approvals", "r_1", "r_2"], /unexpected argument "r_2"/],
      [
        ["approvals", "r_1", "--state", "open"],
        /^swarm: --state must be "pending", "resolved" or "all", not "open"\nusage: swarm approvals/,
      ],
      [["allow", "a_1"], /^swarm: missing <requestId>\nusage: swarm allow <agentId> <requestId> \[--json\]\n$/],
      [["allow", "a_1", "p_1", "--message", "ok"], /--message is only for deny/],
      [["deny"], /^swarm: missing <agentId>\nusage: swarm deny <agentId> <requestId> \[--message TEXT\] \[--json\]\n$/],
      [["deny", "a_1", "p_1", "--message", ""], /--message must be 1\.\.10000 characters/],
      [["deny", "a_1", "p_1", "--message", "x".repeat(10_001)], /--message must be 1\.\.10000 characters/],
      [["deny", "a_1", "p_1", "--reason", "x"], /--reason/],
      [
        ["stop", "a_1", "--drain-timeout", "5000"],
        /^swarm: --drain-timeout is only for stop --mode drain\nusage: swarm stop <agentId> \[--subtree\] \[--mode abort\|drain\] \[--drain-timeout MS\]/,
      ],
      [["stop", "a_1", "--mode", "abort", "--drain-timeout", "5000"], /--drain-timeout is only for stop --mode drain/],
      [["pause", "a_1", "--drain-timeout", "5000"], /--drain-timeout is only for stop --mode drain/],
      [
        ["stop", "a_1", "--mode", "drain", "--drain-timeout", "999"],
        /--drain-timeout must be an integer 1000\.\.86400000, not "999"/,
      ],
      [
        ["stop", "a_1", "--mode", "drain", "--drain-timeout", "86400001"],
        /--drain-timeout must be an integer 1000\.\.86400000/,
      ],
      [["stop", "a_1", "--mode", "drain", "--drain-timeout", "1m"], /--drain-timeout must be an integer/],
    ] as const) {
      const bad = await swarmInProcess([...args], env);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
      assert.match(bad.stderr, problem, args.join(" "));
      assert.equal(bad.stdout, "");
    }
    for (const args of [
      ["approvals", "r_1", "--state", "all"],
      ["allow", "a_1", "p_1"],
      ["deny", "a_1", "p_1", "-m", "no"],
      ["stop", "a_1", "--mode", "drain", "--drain-timeout", "1000"],
    ]) {
      assert.equal((await swarmInProcess(args, env)).code, 3, `${args.join(" ")} is a valid command line`);
    }
    const help = await swarmInProcess(["--help"], env);
    assert.match(
      help.stdout,
      /swarm approvals <runId>[\s\S]*swarm allow <agentId> <requestId>[\s\S]*swarm deny <agentId> <requestId> \[--message TEXT\]/,
    );
  });
});

describe("swarm approvals, allow, deny and stop --mode drain against a live daemon", () => {
  let d: Daemon;
  let dir: string;
  let env: Record<string, string>;
  const file = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(value));
    return path;
  };
  const json = (text: string): Json => JSON.parse(text);

  before(async () => {
    d = await startDaemon();
    dir = tempDir("swarm-approvals-");
    env = { SWARM_URL: d.url };
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The first event of `type` (of `agentId`, when given) on the run's stream, replayed or live. */
  async function firstEvent(runId: string, type: string, agentId?: string): Promise<Json> {
    const sse = await openEvents(d.url, runId);
    try {
      return await sse.waitFor(
        (m) => m.event === type && (agentId === undefined || m.data.agentId === agentId),
        60_000,
      );
    } finally {
      sse.close();
    }
  }
  /** A keepAlive run whose root's first call, `echo hi`, its `approve` policy holds; its answer is that call's output. */
  async function heldRun(name: string) {
    const spec = {
      name,
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo hi" } }, { text: "done: {{lastToolResult}}" }],
    };
    const run = await swarmInProcess(
      ["run", file(`${name}.json`, spec), "--prompt", "go", "--keep-alive", "--json"],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const { runId, rootAgentId: root } = json(run.stdout);
    const asked = await firstEvent(runId, "permission_request");
    assert.deepEqual([asked.data.agentId, asked.data.tool, asked.data.args?.command], [root, "bash", "echo hi"]);
    return { runId: runId as string, root: root as string, requestId: asked.data.requestId as string };
  }

  it("approvals → allow: the held call is listed and counted in the tree until allowed, then runs; a second answer is a 409, exit 1", async () => {
    const { runId, root, requestId } = await heldRun("careful");
    assert.match(requestId, /^p_[0-9a-f]+$/);
    const listed = await swarm(["approvals", runId, "--json"], env);
    assert.equal(listed.code, 0, listed.stderr);
    const { permissions } = json(listed.stdout);
    assert.deepEqual(
      permissions.map((p: Json) => [
        p.requestId,
        p.runId,
        p.agentId,
        p.tool,
        p.args.command,
        p.state,
        p.expiresAt,
        p.decision,
        p.by,
        p.resolvedAt,
      ]),
      [[requestId, runId, root, "bash", "echo hi", "pending", null, null, null, null]],
    );
    const table = await swarmInProcess(["approvals", runId], env);
    assert.match(
      table.stdout,
      new RegExp(`^REQUEST +AGENT +TOOL +AGE +ARGS\n${requestId} +${root} +bash +\\d+s +\\{"command":"echo hi".*\n$`),
    );
    const tree = await swarmInProcess(["tree", runId, "--once"], env);
    assert.match(tree.stdout, new RegExp(`\n● careful ${root} running · 1 approval pending · ${SPENT}\n$`));
    assert.equal((await swarmInProcess(["result", root], env)).code, 4, "the turn waits for the operator");

    const allowed = await swarm(["allow", root, requestId], env);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, new RegExp(`^${requestId} allowed: ${root} bash \\{"command":"echo hi".*\n$`));
    const result = await swarmInProcess(["result", root, "--wait", "60"], env);
    assert.equal(result.stdout, "done: hi\n", result.stderr);

    const none = await swarmInProcess(["approvals", runId], env);
    assert.deepEqual([none.code, none.stdout, none.stderr], [0, "", `no pending approval requests in run ${runId}\n`]);
    const resolved = json(
      (await swarmInProcess(["approvals", runId, "--state", "resolved", "--json"], env)).stdout,
    ).permissions;
    assert.deepEqual(
      resolved.map((p: Json) => [p.requestId, p.state, p.decision, p.by, p.message]),
      [[requestId, "resolved", "allow", "operator", null]],
    );
    assert.ok(resolved[0].resolvedAt >= resolved[0].at);
    const again = await swarm(["allow", root, requestId], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^swarm: service error 409: /);
    const unknown = await swarmInProcess(["deny", root, "p_0000"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^swarm: service error 404: /);
    const noRun = await swarmInProcess(["approvals", "r_00"], env);
    assert.equal(noRun.code, 1);
    assert.match(noRun.stderr, /^swarm: service error 404: /);
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("deny --message: the held call fails without running and the agent is told the message; approvals --state all shows who decided", async () => {
    const { runId, root, requestId } = await heldRun("refused");
    const denied = await swarmInProcess(["deny", root, requestId, "--message", "no"], env);
    assert.equal(denied.code, 0, denied.stderr);
    assert.match(denied.stdout, new RegExp(`^${requestId} denied: ${root} bash \\{"command":"echo hi".* \\(no\\)\n$`));
    const result = await swarmInProcess(["result", root, "--wait", "60"], env);
    assert.match(result.stdout, /^done: .*\bno\b/s, result.stderr);
    assert.doesNotMatch(result.stdout, /\bhi\b/, "the command did not run");
    assert.match(
      (await swarmInProcess(["tree", runId, "--once"], env)).stdout,
      new RegExp(`\n● refused ${root} running · 1 tool error · ${SPENT}\n$`),
      "the denied call is counted",
    );
    const events = (await swarm(["events", runId, "--json"], env)).stdout.trimEnd().split("\n").map(json);
    assert.equal(
      events.find((e: Json) => e.type === "tool_end" && e.agentId === root)?.data.isError,
      true,
      "the tool call failed",
    );
    const all = await swarmInProcess(["approvals", runId, "--state", "all"], env);
    assert.match(
      all.stdout,
      new RegExp(
        `^REQUEST +AGENT +TOOL +AGE +DECISION +BY +ARGS +MESSAGE\n${requestId} +${root} +bash +\\d+s +deny +operator +\\{"command":"echo hi".* +no\n$`,
      ),
    );
    await d.call("DELETE", `/runs/${runId}`);
  });

  it("stop --mode drain: an idle keepAlive root ends as done (reason drained); a busy one shows (draining), refuses steers and ends once its turn settles", async () => {
    const idle = json(
      (await swarmInProcess(["run", file("idle.json", { name: "idle", script: [] }), "--keep-alive", "--json"], env))
        .stdout,
    );
    await waitForState(d, idle.rootAgentId, "running");
    const drained = await swarm(["stop", idle.rootAgentId, "--mode", "drain", "--json"], env);
    assert.equal(drained.code, 0, drained.stderr);
    assert.deepEqual(json(drained.stdout), { results: [{ agentId: idle.rootAgentId, outcome: "applied" }] });
    assert.equal((await firstEvent(idle.runId, "agent_ended", idle.rootAgentId)).data.reason, "drained");
    assert.equal((await d.call("GET", `/agents/${idle.rootAgentId}`)).body.state, "done");

    const busy = json(
      (
        await swarmInProcess(
          [
            "run",
            file("busy.json", { name: "busy", script: [{ text: "slow answer", delayMs: 4_000 }] }),
            "--prompt",
            "go",
            "--keep-alive",
            "--json",
          ],
          env,
        )
      ).stdout,
    );
    await firstEvent(busy.runId, "turn_start", busy.rootAgentId);
    const marking = await swarmInProcess(
      ["stop", busy.rootAgentId, "--mode", "drain", "--drain-timeout", "60000"],
      env,
    );
    assert.equal(
      marking.stdout,
      `${busy.rootAgentId} draining: takes no new prompt, steer or spawn, and ends once its accepted turns settle\n`,
      marking.stderr,
    );
    assert.match(
      (await swarmInProcess(["tree", busy.runId, "--once"], env)).stdout,
      new RegExp(`\n● busy ${busy.rootAgentId} running \\(draining\\)`),
    );
    const steer = await swarmInProcess(["steer", busy.rootAgentId, "hurry"], env);
    assert.equal(steer.code, 1);
    assert.equal(
      steer.stderr,
      `swarm: ${busy.rootAgentId} is draining: it takes no new prompt, steer or spawn, and ends once its turns settle\n`,
    );
    assert.equal((await swarmInProcess(["result", busy.rootAgentId, "--wait", "60"], env)).stdout, "slow answer\n");
    const ended = await firstEvent(busy.runId, "agent_ended", busy.rootAgentId);
    assert.deepEqual([ended.data.outcome, ended.data.reason], ["success", "drained"]);
    const deadline = (await firstEvent(busy.runId, "agent_draining", busy.rootAgentId)).data;
    assert.ok(Math.abs(deadline.deadline - deadline.at - 60_000) < 5_000, "--drain-timeout sets the deadline");
    assert.match(
      (await swarmInProcess(["tree", busy.runId], env)).stdout,
      new RegExp(`\n✓ busy ${busy.rootAgentId} done success · ${SPENT}\n$`),
    );
  });

  it("stop --mode drain --drain-timeout: a turn still running at the deadline is aborted (reason drain-timeout)", async () => {
    const slow = json(
      (
        await swarmInProcess(
          [
            "run",
            file("slow.json", { name: "slow", script: [{ text: "too late", delayMs: 30_000 }] }),
            "--prompt",
            "go",
            "--keep-alive",
            "--json",
          ],
          env,
        )
      ).stdout,
    );
    await firstEvent(slow.runId, "turn_start", slow.rootAgentId);
    const started = Date.now();
    const marking = await swarmInProcess(["stop", slow.rootAgentId, "--mode", "drain", "--drain-timeout", "1000"], env);
    assert.equal(
      marking.stdout,
      `${slow.rootAgentId} draining: takes no new prompt, steer or spawn, and ends once its accepted turns settle\n`,
      marking.stderr,
    );
    const ended = await firstEvent(slow.runId, "agent_ended", slow.rootAgentId);
    assert.deepEqual([ended.data.outcome, ended.data.reason], ["aborted", "drain-timeout"]);
    assert.ok(Date.now() - started < 20_000, "aborted at the deadline, not when the turn would have ended");
    assert.equal((await d.call("GET", `/agents/${slow.rootAgentId}`)).body.state, "aborted");
  });
});
