import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { echoSpec, type MemoryService, rejectsWithCode, startMemoryService } from "../support/memory-service.ts";

describe("service: spawning", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  const liveRoot = async (budget?: { spawnDepth?: number; maxAgents?: number }) => {
    const created = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true, budget });
    await s.agentWhen(created.rootAgentId, (a) => a.state === "running", "runs");
    return created;
  };

  it("forks a child from its live parent: the child sees the parent's files and has its place in the tree", async () => {
    const { runId, rootAgentId } = await s.service.createRun({
      spec: {
        name: "root",
        script: [{ tool: "bash", args: { command: "echo parent-data > notes.txt" } }, { text: "wrote" }],
      },
      prompt: "write",
      keepAlive: true,
    });
    await s.service.result(rootAgentId, 5);
    const first = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: echoSpec("first"),
      keepAlive: true,
    });
    const reader = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: {
        name: "reader",
        script: [{ tool: "bash", args: { command: "cat notes.txt" } }, { text: "{{lastToolResult}}" }],
      },
      prompt: "read",
    });
    assert.deepEqual([first.state, reader.state], ["provisioning", "provisioning"]);
    assert.equal((await s.service.result(reader.agentId, 5)).result, "parent-data\n");
    const view = await s.service.getAgent(reader.agentId);
    assert.deepEqual([view.parentAgentId, view.depth, view.spawnIndex, view.specName], [rootAgentId, 1, 1, "reader"]);
  });

  it("gives children spawned at the same moment distinct spawnIndex values, in the order they were asked", async () => {
    const { runId, rootAgentId } = await liveRoot();
    const spawned = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec(`c${i}`) })),
    );
    const indexes = await Promise.all(
      spawned.map(async ({ agentId }) => (await s.service.getAgent(agentId)).spawnIndex),
    );
    assert.deepEqual(indexes, [0, 1, 2, 3, 4]);
  });

  it("refuses spawns past spawnDepth or maxAgents: 202 all the same, the child ends budget-exceeded with no sandbox", async () => {
    const { runId, rootAgentId } = await liveRoot({ spawnDepth: 1, maxAgents: 2 });
    const a = await s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("a"), keepAlive: true });
    await s.agentWhen(a.agentId, (v) => v.state === "running", "runs");
    const deep = await s.service.spawn(runId, { parentAgentId: a.agentId, spec: echoSpec("too-deep") });
    const b = await s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("b"), keepAlive: true });
    const many = await s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("too-many") });

    for (const refused of [deep.agentId, many.agentId]) {
      const view = await s.service.getAgent(refused);
      assert.deepEqual([view.state, view.outcome, view.sandboxId], ["done", "budget-exceeded", null]);
    }
    assert.equal((await s.service.getAgent(b.agentId)).outcome, null, "b was within budget");
    const denied = (await s.events(runId))
      .filter((e) => e.type === "budget_denied")
      .map((e) => [e.agentId, e.data.dimension, e.data.remaining, e.data.childAgentId]);
    assert.deepEqual(denied, [
      [a.agentId, "spawnDepth", 0, deep.agentId],
      [rootAgentId, "maxAgents", 0, many.agentId],
    ]);
    const sandboxAgents = (await s.runtime.list(AbortSignal.timeout(1000))).map((i) => i.agentId);
    assert.ok(!sandboxAgents.includes(deep.agentId) && !sandboxAgents.includes(many.agentId));
  });

  it("waitFor: the child waits in spawning until its dependency settles, then finds the result in /inputs", async () => {
    const { runId, rootAgentId } = await liveRoot();
    const dep = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: { name: "dep", script: [{ text: "dependency result", delayMs: 300 }] },
      prompt: "x",
    });
    const waiter = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: {
        name: "waiter",
        script: [
          { tool: "bash", args: { command: `cat /inputs/${dep.agentId}.md` } },
          { text: "got: {{lastToolResult}}" },
        ],
      },
      prompt: "read inputs",
      waitFor: [dep.agentId],
    });
    assert.equal(waiter.state, "spawning");
    assert.equal((await s.service.getAgent(waiter.agentId)).state, "spawning");
    assert.equal((await s.service.result(waiter.agentId, 5)).result, "got: dependency result");

    const events = await s.events(runId);
    const depSettled = events.find((e) => e.type === "handle_settled" && e.agentId === dep.agentId)!;
    const depsSettled = events.find(
      (e) => e.type === "agent_state_changed" && e.agentId === waiter.agentId && e.data.reason === "deps-settled",
    )!;
    assert.deepEqual([depsSettled.data.from, depsSettled.data.to], ["spawning", "provisioning"]);
    assert.ok(depSettled.seq < depsSettled.seq, "the fork waits for the dependency's result");
  });

  it("an agent's own spawn_agent and await_result go through the service, budgets included", async () => {
    const { runId, rootAgentId } = await liveRoot({ maxAgents: 2 });
    const slow = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: { name: "slow", script: [{ text: "slow result", delayMs: 200 }] },
      prompt: "go",
    });
    const worker = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: {
        name: "worker",
        script: [
          { tool: "await_result", args: { agentId: slow.agentId, waitSeconds: 5 } },
          { tool: "spawn_agent", args: { spec: echoSpec("grandchild"), prompt: "hi" } },
          { text: "{{lastToolResult}}" },
        ],
      },
      prompt: "work",
    });
    const result = (await s.service.result(worker.agentId, 5)).result!;
    const grandchild = JSON.parse(result) as { agentId: string };
    const view = await s.service.getAgent(grandchild.agentId);
    assert.equal(view.parentAgentId, worker.agentId, "the child is in the tree, under the agent that made it");
    assert.equal(view.outcome, "budget-exceeded", "the root's maxAgents of 2 counts it");
    const awaited = (await s.events(runId)).find(
      (e) => e.type === "tool_end" && e.agentId === worker.agentId && e.data.toolName === "await_result",
    )!;
    assert.match(String(awaited.data.output), /slow result/);
  });

  it("returns the original child to a retry with the same idempotencyKey", async () => {
    const { runId, rootAgentId } = await liveRoot();
    const body = { parentAgentId: rootAgentId, spec: echoSpec("once"), idempotencyKey: "retry-me", keepAlive: true };
    const first = await s.service.spawn(runId, body);
    assert.deepEqual(await s.service.spawn(runId, body), first);
    assert.equal(s.service.getRun(runId).agents.length, 2);
  });

  it("refuses a parent outside the run (404), waitFor outside the run (400), an ended parent (409), an unknown run (404)", async () => {
    const { runId, rootAgentId } = await liveRoot();
    const other = await s.service.createRun({ spec: echoSpec("other"), keepAlive: true });
    await rejectsWithCode(
      () => s.service.spawn(runId, { parentAgentId: other.rootAgentId, spec: echoSpec("x") }),
      "AGENT_NOT_FOUND",
    );
    await rejectsWithCode(
      () => s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("x"), waitFor: [other.rootAgentId] }),
      "INVALID_BODY",
    );
    await rejectsWithCode(
      () => s.service.spawn("r_missing", { parentAgentId: rootAgentId, spec: echoSpec("x") }),
      "RUN_NOT_FOUND",
    );
    await s.service.stop(rootAgentId, { mode: "abort", scope: "agent" });
    await rejectsWithCode(
      () => s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("x") }),
      "AGENT_NOT_LIVE",
    );
    assert.equal(s.service.getRun(runId).agents.length, 1, "nothing refused was recorded");
  });
});
