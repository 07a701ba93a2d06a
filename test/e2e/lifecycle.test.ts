import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { openEvents } from "../support/sse-client.ts";

const echo = (name = "echo") => ({ name, script: [] });
const json = { "content-type": "application/json" };

describe(`run lifecycle over HTTP (${e2eRuntime()} runtime, scripted agents)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  it("creates a run: 202 provisioning, then the root runs its prompt and ends done/success", async () => {
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "root",
        script: [{ tool: "bash", args: { command: "echo from-bash" } }, { text: "said {{lastToolResult}}" }],
      },
      prompt: "go",
    });
    assert.equal(created.status, 202);
    assert.deepEqual(Object.keys(created.body).sort(), ["rootAgentId", "runId", "state"]);
    assert.equal(created.body.state, "provisioning");
    assert.match(created.body.runId, /^r_[0-9a-f]+$/);
    assert.match(created.body.rootAgentId, /^a_[0-9a-f]+$/);

    const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=60`);
    assert.equal(result.status, 200);
    assert.deepEqual(result.body, {
      agentId: created.body.rootAgentId,
      state: "settled",
      outcome: "success",
      resultRef: `fs://${created.body.rootAgentId}/result.md`,
      result: "said from-bash\n",
    });

    const events = await openEvents(d.url, created.body.runId);
    await events.waitFor((m) => m.event === "agent_ended");
    events.close();
    const types = events.messages.map((m) => m.event);
    for (const type of [
      "run_started",
      "agent_spawned",
      "agent_provisioned",
      "agent_state_changed",
      "agent_start",
      "tool_start",
      "tool_end",
      "agent_end",
      "handle_settled",
      "agent_ended",
    ]) {
      assert.ok(types.includes(type), `${type} in ${types.join(",")}`);
    }
    assert.ok(types.indexOf("handle_settled") < types.indexOf("agent_ended"));
    const ids = events.messages.map((m) => m.id);
    assert.deepEqual(
      ids,
      ids.map((_, i) => i + 1),
      "every replayed event is persisted, with a gap-free seq",
    );
    const ended = events.messages.find((m) => m.event === "agent_ended")!;
    assert.equal(ended.data.outcome, "success");
    assert.equal(typeof ended.data.endedAt, "number");

    const snapshot = await d.call("GET", `/runs/${created.body.runId}`);
    assert.equal(snapshot.status, 200);
    assert.equal(snapshot.body.asOf, events.messages.at(-1)!.id);
    const [root] = snapshot.body.agents;
    assert.equal(root.state, "done");
    assert.equal(root.outcome, "success");
    assert.equal(root.parentAgentId, null);
    assert.equal(root.depth, 0);
    assert.equal(root.spawnIndex, 0);
    assert.equal(root.specName, "root");
    assert.match(root.sandboxId, /^[0-9a-f-]{36}$/);
  });

  it("a root created without a prompt waits live and idle for its first prompt", async () => {
    const created = await d.call("POST", "/runs", { spec: echo() });
    const root = created.body.rootAgentId;
    const pending = await d.call("GET", `/agents/${root}/result?wait=1`);
    assert.equal(pending.status, 202);
    assert.deepEqual(pending.body, { agentId: root, state: "pending", outcome: null, resultRef: null, result: null });
    await waitForState(d, root, "running");
    const agent = await d.call("GET", `/agents/${root}`);
    assert.deepEqual(
      Object.keys(agent.body).sort(),
      [
        "agentId",
        "budget",
        "createdAt",
        "depth",
        "endedAt",
        "node",
        "outcome",
        "parentAgentId",
        "pendingPermissions",
        "prompt",
        "runId",
        "sandboxId",
        "sessionStats",
        "spawnIndex",
        "specName",
        "state",
        "subtreeUsage",
        "toolErrors",
        "usage",
        "waitFor",
      ],
      "the spec's fields, usage, prompt, inputs, budget and sessionStats, nothing internal",
    );
    assert.equal(typeof agent.body.sessionStats, "object", "a running agent answers with its session stats");
    assert.equal(agent.body.toolErrors, 0, "always present: none refused");

    assert.equal((await d.call("POST", `/agents/${root}/prompt`, { text: "first" })).status, 202);
    const result = await d.call("GET", `/agents/${root}/result?wait=60`);
    assert.equal(result.body.result, "first");
  });

  it("pauses and resumes: the container is frozen, the state and pausedBy follow, pause twice is a no-op", async () => {
    const created = await d.call("POST", "/runs", { spec: echo(), keepAlive: true });
    const root = created.body.rootAgentId;
    await waitForState(d, root, "running");
    const paused = await d.call("POST", `/agents/${root}/pause`, {}, json);
    assert.equal(paused.status, 202);
    assert.deepEqual(paused.body, { results: [{ agentId: root, outcome: "applied" }] });
    const view = await d.call("GET", `/agents/${root}`);
    assert.equal(view.body.state, "paused");
    assert.equal(view.body.pausedBy, "operator");
    assert.equal(view.body.sessionStats, undefined, "no stats while paused");
    const info = await d.runtime.inspect(view.body.sandboxId, AbortSignal.timeout(5_000));
    assert.equal(info?.status, "frozen");

    const again = await d.call("POST", `/agents/${root}/pause`);
    assert.deepEqual(again.body, { results: [{ agentId: root, outcome: "noop" }] });

    const resumed = await d.call("POST", `/agents/${root}/resume`);
    assert.equal(resumed.status, 202);
    assert.deepEqual(resumed.body, { results: [{ agentId: root, outcome: "applied" }] });
    assert.equal((await d.call("GET", `/agents/${root}`)).body.state, "running");
    assert.equal((await d.runtime.inspect(view.body.sandboxId, AbortSignal.timeout(5_000)))?.status, "running");
    assert.equal((await d.call("POST", `/agents/${root}/resume`)).status, 409, "resume of a running agent is refused");
  });

  it("stops: outcome aborted, sandbox closed; controls on the ended agent are refused, stop keeps the outcome", async () => {
    const created = await d.call("POST", "/runs", { spec: echo(), keepAlive: true });
    const root = created.body.rootAgentId;
    await waitForState(d, root, "running");
    const sandboxId = (await d.call("GET", `/agents/${root}`)).body.sandboxId;
    const stopped = await d.call("POST", `/agents/${root}/stop`, { mode: "abort" });
    assert.equal(stopped.status, 202);
    assert.deepEqual(stopped.body, { results: [{ agentId: root, outcome: "applied" }] });
    const view = (await d.call("GET", `/agents/${root}`)).body;
    assert.equal(view.state, "aborted");
    assert.equal(view.outcome, "aborted");
    assert.equal(typeof view.endedAt, "number");
    assert.equal(await d.runtime.inspect(sandboxId, AbortSignal.timeout(5_000)), undefined, "sandbox closed");

    for (const route of ["pause", "resume", "prompt", "steer"]) {
      const body = route === "prompt" ? { text: "x" } : route === "steer" ? { message: "x" } : {};
      const refused = await d.call("POST", `/agents/${root}/${route}`, body, json);
      assert.equal(refused.status, 409, route);
      assert.equal(typeof refused.body.error, "string");
    }
    const again = await d.call("POST", `/agents/${root}/stop`);
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, { results: [{ agentId: root, outcome: "noop" }] });
    assert.equal((await d.call("GET", `/agents/${root}`)).body.outcome, "aborted");
  });

  it("DELETE /runs/:id aborts every live agent, answers 204, and keeps the ledger readable", async () => {
    const created = await d.call("POST", "/runs", { spec: echo(), keepAlive: true });
    const { runId, rootAgentId } = created.body;
    await waitForState(d, rootAgentId, "running");
    const child = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: rootAgentId,
      spec: echo("child"),
      keepAlive: true,
    });
    await waitForState(d, child.body.agentId, "running");
    const deleted = await d.call("DELETE", `/runs/${runId}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.body, undefined);
    const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      snapshot.agents.map((a: { outcome: string }) => a.outcome),
      ["aborted", "aborted"],
    );
    const events = await openEvents(d.url, runId);
    await events.waitFor((m) => m.id === snapshot.asOf);
    events.close();
    const ends = events.messages.filter((m) => m.event === "agent_ended").map((m) => m.data.agentId);
    assert.deepEqual(ends, [child.body.agentId, rootAgentId], "leaves first");
    assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204, "deleting again is harmless");
    assert.equal((await d.call("DELETE", "/runs/r_0000")).status, 404);
  });
});
