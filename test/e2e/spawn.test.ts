import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { openEvents } from "../support/sse-client.ts";

const echo = (name = "echo") => ({ name, script: [] });

describe(`spawning children over HTTP and from agents (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  async function liveRoot(spec: Record<string, unknown> = echo("root"), extra: Record<string, unknown> = {}) {
    const created = await d.call("POST", "/runs", { spec, keepAlive: true, ...extra });
    await waitForState(d, created.body.rootAgentId, "running");
    return created.body as { runId: string; rootAgentId: string };
  }

  it("forks a child from the live parent's sandbox: it sees the parent's files, gets depth and spawnIndex", async () => {
    const root = await liveRoot({
      name: "root",
      script: [{ tool: "bash", args: { command: "echo parent-data > notes.txt" } }, { text: "wrote" }],
    });
    await d.call("POST", `/agents/${root.rootAgentId}/prompt`, { text: "write" });
    await d.call("GET", `/agents/${root.rootAgentId}/result?wait=60`);
    const spawned = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: {
        name: "reader",
        script: [{ tool: "bash", args: { command: "cat notes.txt" } }, { text: "{{lastToolResult}}" }],
      },
      prompt: "read",
    });
    assert.equal(spawned.status, 202);
    assert.deepEqual(Object.keys(spawned.body).sort(), ["agentId", "state"]);
    assert.equal(spawned.body.state, "provisioning");
    const result = await d.call("GET", `/agents/${spawned.body.agentId}/result?wait=60`);
    assert.equal(result.body.result, "parent-data\n");
    const view = (await d.call("GET", `/agents/${spawned.body.agentId}`)).body;
    assert.equal(view.parentAgentId, root.rootAgentId);
    assert.equal(view.depth, 1);
    assert.equal(view.spawnIndex, 0);
    assert.equal(view.specName, "reader");
  });

  it("waitFor: the child is spawning until its dependencies settle, then reads their results in /inputs", async () => {
    const root = await liveRoot();
    const dep = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: { name: "dep", script: [{ text: "dependency result", delayMs: 500 }] },
      prompt: "x",
    });
    const waiter = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: {
        name: "waiter",
        script: [
          { tool: "bash", args: { command: `cat /inputs/${dep.body.agentId}.md` } },
          { text: "got: {{lastToolResult}}" },
        ],
      },
      prompt: "read inputs",
      waitFor: [dep.body.agentId],
    });
    assert.equal(waiter.status, 202);
    assert.equal(waiter.body.state, "spawning");
    const result = await d.call("GET", `/agents/${waiter.body.agentId}/result?wait=60`);
    assert.equal(result.body.result, "got: dependency result");

    const events = await openEvents(d.url, root.runId);
    await events.waitFor((m) => m.event === "handle_settled" && m.data.agentId === waiter.body.agentId);
    events.close();
    const depsSettled = events.messages.find(
      (m) =>
        m.event === "agent_state_changed" && m.data.agentId === waiter.body.agentId && m.data.reason === "deps-settled",
    );
    assert.ok(depsSettled, "agent_state_changed with reason deps-settled");
    assert.deepEqual([depsSettled.data.from, depsSettled.data.to], ["spawning", "provisioning"]);
    const depSettled = events.messages.find(
      (m) => m.event === "handle_settled" && m.data.agentId === dep.body.agentId,
    )!;
    assert.ok(depSettled.id! < depsSettled.id!, "the fork waits for the dependency's result");
    const spawnedEvent = events.messages.find(
      (m) => m.event === "agent_spawned" && m.data.agentId === waiter.body.agentId,
    )!;
    assert.deepEqual(spawnedEvent.data.waitFor, [dep.body.agentId]);
    assert.equal(spawnedEvent.data.sandboxId, null);
    assert.equal(spawnedEvent.data.prompt, "read inputs");
  });

  it("idempotencyKey: a retry returns the original child", async () => {
    const root = await liveRoot();
    const body = { parentAgentId: root.rootAgentId, spec: echo("once"), idempotencyKey: "retry-me", keepAlive: true };
    const first = await d.call("POST", `/runs/${root.runId}/agents`, body);
    const second = await d.call("POST", `/runs/${root.runId}/agents`, body);
    assert.equal(second.status, 202);
    assert.deepEqual(second.body, first.body);
    const snapshot = (await d.call("GET", `/runs/${root.runId}`)).body;
    assert.equal(snapshot.agents.length, 2);
  });

  it("budgets: a spawn past spawnDepth or maxAgents answers 202, the child ends budget-exceeded, budget_denied names the dimension", async () => {
    const root = await liveRoot(echo("root"), { budget: { spawnDepth: 1, maxAgents: 2 } });
    const a = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: echo("a"),
      keepAlive: true,
    });
    await waitForState(d, a.body.agentId, "running");
    const deep = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: a.body.agentId,
      spec: echo("too-deep"),
    });
    assert.equal(deep.status, 202);
    const b = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: echo("b"),
      keepAlive: true,
    });
    const c = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: echo("too-many"),
    });
    assert.equal(c.status, 202);
    for (const refused of [deep.body.agentId, c.body.agentId]) {
      const view = (await d.call("GET", `/agents/${refused}`)).body;
      assert.equal(view.state, "done");
      assert.equal(view.outcome, "budget-exceeded");
    }
    assert.equal((await d.call("GET", `/agents/${b.body.agentId}`)).body.outcome, null, "b was within budget");
    const events = await openEvents(d.url, root.runId);
    await events.waitFor((m) => m.event === "budget_denied" && m.data.dimension === "maxAgents");
    events.close();
    const denied = events.messages
      .filter((m) => m.event === "budget_denied")
      .map((m) => [m.data.agentId, m.data.dimension, m.data.remaining]);
    assert.deepEqual(denied, [
      [a.body.agentId, "spawnDepth", 0],
      [root.rootAgentId, "maxAgents", 0],
    ]);
  });

  it("an agent's own spawn_agent goes through the service: the child is in the tree and a subtree stop reaches it", async () => {
    const root = await liveRoot({
      name: "spawner",
      script: [
        {
          tool: "spawn_agent",
          args: {
            spec: { name: "made-by-agent", script: [{ tool: "bash", args: { command: "sleep 300" } }] },
            prompt: "work",
          },
        },
        { text: "spawned {{lastToolResult}}" },
      ],
    });
    await d.call("POST", `/agents/${root.rootAgentId}/prompt`, { text: "spawn" });
    const rootResult = await d.call("GET", `/agents/${root.rootAgentId}/result?wait=60`);
    const childId = /"agentId":"(a_[0-9a-f]+)"/.exec(rootResult.body.result)?.[1];
    assert.ok(childId, rootResult.body.result);
    await waitForState(d, childId, "running");
    const tree = (await d.call("GET", `/runs/${root.runId}`)).body.agents;
    assert.equal(tree.find((a: { agentId: string }) => a.agentId === childId).parentAgentId, root.rootAgentId);

    const stopped = await d.call("POST", `/agents/${root.rootAgentId}/stop`, { scope: "subtree" });
    assert.deepEqual(
      stopped.body.results.map((r: { agentId: string }) => r.agentId),
      [childId, root.rootAgentId],
      "leaves first",
    );
    assert.equal((await d.call("GET", `/agents/${childId}`)).body.outcome, "aborted");
  });

  it("an agent's spawn_agent with bad parameters gets an error naming each bad field, and no child", async () => {
    const root = await liveRoot({
      name: "careless",
      script: [
        { tool: "spawn_agent", args: { spec: { name: "no spaces allowed", script: [], colour: "red" } } },
        { text: "got {{lastToolResult}}" },
      ],
    });
    await d.call("POST", `/agents/${root.rootAgentId}/prompt`, { text: "spawn" });
    const result = (await d.call("GET", `/agents/${root.rootAgentId}/result?wait=60`)).body.result as string;
    assert.match(result, /params\.spec\.name: /);
    assert.match(result, /params\.spec\.colour: unknown field/);
    assert.equal((await d.call("GET", `/runs/${root.runId}`)).body.agents.length, 1);
  });
});
