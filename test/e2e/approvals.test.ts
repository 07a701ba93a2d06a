/**
 * Approvals over HTTP with scripted agents: a tool call the agent's `approve` policy holds waits
 * in the run's inbox until the operator answers, and the answer reaches the harness once. Runs on
 * the simulated runtime (or `SWARM_E2E_RUNTIME`); across a daemon SIGKILL it is
 * test/faults/approvals-sigkill.test.ts, on the process and docker runtimes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { inbox, startGatedRun } from "../support/approval-runs.ts";
import { createRuntime, type Daemon, e2eRuntime, type Json, sandboxRuntime, startDaemon } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";
import { openEvents } from "../support/sse-client.ts";

type Call = Daemon["call"];

const result = async (call: Call, agentId: string) => (await call("GET", `/agents/${agentId}/result?wait=60`)).body;

describe(`approvals (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  const events = async (runId: string, type: string): Promise<Json[]> =>
    (await d.ledger.read(runId, 0)).filter((e) => e.type === type);

  it("allow: the held call runs once the operator allows it; the request is resolved once", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo approved-ran" } }, { text: "tool said: {{lastToolResult}}" }],
    });
    const stream = await openEvents(d.url, runId);
    const asked = await stream.waitFor((m) => m.event === "permission_request", 60_000);
    const [request] = await inbox(d.call, runId, 1);
    assert.equal(typeof asked.id, "number", "persisted: it carries an id and is replayed");
    assert.equal(asked.data.agentId, agentId);
    assert.equal(asked.data.requestId, request.requestId);
    assert.deepEqual(asked.data.args, { command: "echo approved-ran" });
    assert.equal(asked.data.at, request.at);
    assert.equal(request.agentId, agentId);
    assert.equal(request.tool, "bash");
    assert.deepEqual(request.args, { command: "echo approved-ran" });
    assert.equal(request.state, "pending");
    assert.match(request.requestId, /^p_[0-9a-f]+$/);
    const view = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.deepEqual(view.pendingPermissions, [request.requestId]);
    assert.equal((await d.call("GET", `/agents/${agentId}/result`)).status, 202, "the turn waits for the decision");

    const allowed = await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "allow" });
    assert.equal(allowed.status, 202);
    assert.equal(allowed.body.state, "resolved");
    assert.equal(allowed.body.decision, "allow");
    assert.equal(allowed.body.by, "operator");
    assert.match((await result(d.call, agentId)).result, /tool said: approved-ran/);
    const answered = await stream.waitFor((m) => m.event === "permission_resolved", 10_000);
    stream.close();
    assert.equal(answered.data.by, "operator");
    assert.ok((answered.id ?? 0) > (asked.id ?? 0));

    const again = await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "deny" });
    assert.equal(again.status, 409);
    assert.match(again.body.error, /already resolved/);
    assert.equal((await d.call("POST", `/agents/${agentId}/permissions/p_00ff`, { decision: "allow" })).status, 404);
    assert.deepEqual((await d.call("GET", `/agents/${agentId}`)).body.pendingPermissions, []);
    const [recorded] = await events(runId, "permission_request");
    assert.equal(recorded.at, request.at, "the request's time is its event's");
    const resolved = await events(runId, "permission_resolved");
    assert.equal(resolved.length, 1);
    assert.deepEqual(resolved[0].data, {
      requestId: request.requestId,
      decision: "allow",
      message: null,
      by: "operator",
    });
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("deny: the call never runs and the model reads the operator's message as the tool's error", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [
        { tool: "bash", args: { command: "touch /work/denied-ran" } },
        { text: "tool said: {{lastToolResult}}" },
      ],
    });
    const [request] = await inbox(d.call, runId, 1);
    const denied = await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, {
      decision: "deny",
      message: "not on this branch",
    });
    assert.equal(denied.status, 202);
    assert.equal(denied.body.message, "not on this branch");
    assert.equal((await result(d.call, agentId)).result, "tool said: not on this branch");
    const [ended] = (await events(runId, "tool_end")).filter((e) => e.agentId === agentId);
    assert.equal(ended.data.isError, true);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("two answers at once: one is taken, the other is a 409, and the harness acts on the one taken", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo raced" } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    const url = `/agents/${agentId}/permissions/${request.requestId}`;
    const answers = await Promise.all([
      d.call("POST", url, { decision: "allow" }),
      d.call("POST", url, { decision: "deny", message: "lost the race" }),
    ]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [202, 409]);
    const taken = answers.find((a) => a.status === 202)!.body;
    assert.equal((await events(runId, "permission_resolved")).length, 1);
    const text = (await result(d.call, agentId)).result;
    if (taken.decision === "allow") assert.match(text, /raced/);
    else assert.equal(text, "lost the race");
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a pattern that does not match runs without asking; one that matches asks", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash", match: "rm |git push" }],
      script: [
        { tool: "bash", args: { command: "echo harmless" } },
        { tool: "bash", args: { command: "rm -f /work/nothing" } },
        { text: "done" },
      ],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.deepEqual(request.args, { command: "rm -f /work/nothing" }, "only the matching call was held");
    const starts = (await events(runId, "tool_start")).filter((e) => e.agentId === agentId);
    assert.equal(starts.length, 2, "the harmless call ran before the held one");
    await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "allow" });
    assert.equal((await result(d.call, agentId)).result, "done");
    assert.equal((await events(runId, "permission_request")).length, 1);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a child inherits its parent's policy; spawn_agent is gated by the daemon; the inbox covers the tree", async () => {
    const child = { name: "kid", script: [{ tool: "bash", args: { command: "echo kid" } }, { text: "kid done" }] };
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }, { tool: "spawn_agent" }],
      script: [{ tool: "spawn_agent", args: { spec: child, prompt: "work" } }, { text: "spawned" }],
    });
    const [spawnAsk] = await inbox(d.call, runId, 1);
    assert.equal(spawnAsk.tool, "spawn_agent");
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1, "no child before the decision");
    await d.call("POST", `/agents/${agentId}/permissions/${spawnAsk.requestId}`, { decision: "allow" });
    const pending = await pollUntil(
      async () => (await d.call("GET", `/runs/${runId}/permissions`)).body.permissions as Json[],
      (list) => list.length === 1 && list[0].tool === "bash",
      "the child's bash call never reached the inbox",
    );
    const kidId = pending[0].agentId;
    assert.notEqual(kidId, agentId, "the child asks for itself");
    assert.equal((await d.call("GET", `/agents/${kidId}`)).body.specName, "kid");
    assert.equal((await d.call("GET", `/runs/${runId}/permissions?state=resolved`)).body.permissions.length, 1);
    assert.equal((await d.call("GET", `/runs/${runId}/permissions?state=all`)).body.permissions.length, 2);
    await d.call("POST", `/agents/${kidId}/permissions/${pending[0].requestId}`, { decision: "allow" });
    assert.equal((await result(d.call, kidId)).result, "kid done");
    await d.call("POST", `/agents/${agentId}/stop`, { scope: "subtree" });
  });

  it("a denied spawn_agent makes no child and fails the tool with the message", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: ["*"],
      script: [{ tool: "spawn_agent", args: { spec: { name: "kid", script: [] } } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, {
      decision: "deny",
      message: "no children today",
    });
    assert.match((await result(d.call, agentId)).result, /no children today/);
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a subtree pause keeps the request pending; an answer given while paused is acted on at the resume", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo after-pause" } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.equal((await d.call("POST", `/agents/${agentId}/pause`, { scope: "subtree" })).status, 202);
    assert.equal((await d.call("GET", `/runs/${runId}/permissions`)).body.permissions[0].state, "pending");
    assert.equal(
      (await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "allow" })).status,
      202,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await d.call("GET", `/agents/${agentId}/result`)).status, 202, "nothing runs while paused");
    assert.equal((await d.call("POST", `/agents/${agentId}/resume`, { scope: "subtree" })).status, 202);
    assert.match((await result(d.call, agentId)).result, /after-pause/);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("stop denies what the agent waits for (by stop); a deleted run's requests are denied by run-deleted", async () => {
    const script = [{ tool: "bash", args: { command: "echo never" } }, { text: "never" }];
    const first = await startGatedRun(d.call, { approve: [{ tool: "bash" }], script });
    const [request] = await inbox(d.call, first.runId, 1);
    await d.call("POST", `/agents/${first.agentId}/stop`, {});
    const [resolved] = await inbox(d.call, first.runId, 1, "resolved");
    assert.equal(resolved.requestId, request.requestId);
    assert.equal(resolved.decision, "deny");
    assert.equal(resolved.by, "stop");
    assert.equal(
      (await d.call("POST", `/agents/${first.agentId}/permissions/${request.requestId}`, { decision: "allow" })).status,
      409,
    );

    const second = await startGatedRun(d.call, { approve: [{ tool: "bash" }], script });
    await inbox(d.call, second.runId, 1);
    assert.equal((await d.call("DELETE", `/runs/${second.runId}`)).status, 204);
    const [gone] = await inbox(d.call, second.runId, 1, "resolved");
    assert.equal(gone.by, "run-deleted");
  });

  it("approveTimeoutMs denies a request nobody answered (by timeout), and the model is told so", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      approveTimeoutMs: 400,
      script: [{ tool: "bash", args: { command: "echo late" } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.ok(
      request.expiresAt <= request.at + 400 && request.expiresAt > request.at + 400 - 1_000,
      "expires approveTimeoutMs after it was asked",
    );
    const [resolved] = await inbox(d.call, runId, 1, "resolved");
    assert.equal(resolved.by, "timeout");
    assert.equal(resolved.decision, "deny");
    assert.match((await result(d.call, agentId)).result, /in time/);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("an agent cannot hang the daemon with arguments that make a pattern backtrack: the call is held for a decision", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "spawn_agent", match: "(a+)+b" }],
      script: [
        { tool: "spawn_agent", args: { spec: { name: "a".repeat(48), script: [] } } },
        { text: "{{lastToolResult}}" },
      ],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.equal(request.tool, "spawn_agent");
    assert.equal((await d.call("GET", "/health")).status, 200);
    await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "deny" });
    assert.match((await result(d.call, agentId)).result, /denied/);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a spec with a bad approve rule is a 400 naming it", async () => {
    const bad = await d.call("POST", "/runs", {
      spec: { name: "x", script: [], approve: [{ tool: "bash", match: "(" }] },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /body\.spec\.approve\[0\]\.match: must be a valid JavaScript regular expression/);
    const unknown = await d.call("POST", "/runs", { spec: { name: "x", script: [], approve: [{ tool: "curl" }] } });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error, /body\.spec\.approve\[0\]/);
  });
});

// A sandbox's own boundary: the harness's files are out of the agent's reach on a real runtime
// (its own user), so this runs there, whatever the runtime of the rest.
describe(`approvals: the policy is out of the agent's reach (${sandboxRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ runtime: (dataDir) => createRuntime(sandboxRuntime(), dataDir) });
  });
  after(() => d.stop());

  it("an agent cannot rewrite its policy: the harness's spec is out of its reach, and the gated call still asks", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "write" }],
      script: [
        {
          tool: "bash",
          args: {
            command:
              'echo \'{"name":"x","script":[]}\' > /control/spec.json 2>&1; rm -f /control/spec.json 2>&1; echo tried',
          },
        },
        { tool: "write", args: { path: "/work/out.txt", content: "x" } },
        { text: "{{lastToolResult}}" },
      ],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.equal(request.tool, "write");
    const [bash]: Json[] = (await d.ledger.read(runId, 0)).filter(
      (e) => e.type === "tool_end" && e.agentId === agentId,
    );
    assert.match(bash.data.output, /tried/);
    assert.doesNotMatch(bash.data.output, /^tried\s*$/, "the rewrite was refused, not silent");
    await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "deny", message: "no" });
    assert.equal((await result(d.call, agentId)).result, "no");
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });
});

describe("approvals where the harness is within the agent's reach", () => {
  let d: Daemon;
  before(async () => {
    // As the process runtime without root: the agent's tools run as the harness's user.
    d = await startDaemon({ runtime: () => ({ ...createMemoryRuntime(), harnessOutOfReach: false }) });
  });
  after(() => d.stop());

  it("rules the harness would enforce are refused with a 400; the daemon's own gates still work", async () => {
    for (const approve of [[{ tool: "bash" }], ["*"], [{ tool: "write", match: "x" }]]) {
      const refused = await d.call("POST", "/runs", { spec: { name: "x", script: [], approve } });
      assert.equal(refused.status, 400, JSON.stringify(approve));
      assert.match(
        refused.body.error,
        /body\.spec\.approve: rules for bash, read, write, edit or "\*" are enforced by the harness/,
      );
    }
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "spawn_agent" }],
      script: [{ tool: "spawn_agent", args: { spec: { name: "kid", script: [] } } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    assert.equal(request.tool, "spawn_agent");
    const child = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: agentId,
      spec: { name: "kid", script: [], approve: [{ tool: "read" }] },
    });
    assert.equal(child.status, 400, "a child cannot add one either");
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });
});

describe(`approvals: waiting is paused time for the quiet-turn limit (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ turnMaxMs: 800 });
  });
  after(() => d.stop());

  it("a request pending longer than the limit does not end the turn", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo patient" } }, { text: "{{lastToolResult}}" }],
    });
    const [request] = await inbox(d.call, runId, 1);
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(
      (await d.call("GET", `/agents/${agentId}/result`)).status,
      202,
      "still waiting, not ended by the quiet-turn limit",
    );
    await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "allow" });
    const settled = await result(d.call, agentId);
    assert.equal(settled.outcome, "success");
    assert.match(settled.result, /patient/);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });
});
