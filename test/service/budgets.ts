import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LedgerEvent } from "../../src/ledger/ledger.ts";
import type { AgentView, Usage } from "../../src/swarm-api.ts";
import { type MemoryService, rejectsWithCode, startMemoryService } from "../support/memory-service.ts";

/** The sum of the run's `model_usage` events for the given agents. */
function usageOf(events: LedgerEvent[], agentIds: string[]): Usage {
  const sum: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, calls: 0 };
  for (const e of events) {
    if (e.type !== "model_usage" || !agentIds.includes(e.agentId ?? "")) continue;
    const d = e.data as Record<string, number>;
    sum.inputTokens += d.inputTokens!;
    sum.outputTokens += d.outputTokens!;
    sum.cacheReadTokens += d.cacheReadTokens!;
    sum.cacheWriteTokens += d.cacheWriteTokens!;
    sum.costUsd += d.costUsd!;
    sum.calls += 1;
  }
  return sum;
}

const bash = (command: string) => ({ tool: "bash", args: { command } });

describe("service: metering and spend budgets", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  it("holds a call once the agent's maxTokens is spent: budget_denied, paused by budget; a resume alone pauses again, a raise alone does not resume, both send the call", async () => {
    const { runId, rootAgentId: root } = await s.service.createRun({
      spec: { name: "spender", script: [bash("echo one"), { text: "done: {{lastToolResult}}" }], maxTokens: 500 },
      prompt: "go",
    });
    const denied = await s.eventWhen(runId, (e) => e.type === "budget_denied", "a budget refusal");
    assert.deepEqual(
      { agentId: denied.agentId, data: denied.data },
      { agentId: root, data: { dimension: "maxTokens", remaining: 0 } },
    );
    const paused = await s.agentWhen(root, (a) => a.state === "paused", "paused by its budget");
    assert.equal(paused.pausedBy, "budget");
    assert.equal(
      paused.usage.calls,
      1,
      "the first call went (500 tokens were left) and counts in full; the second is held",
    );
    assert.ok(paused.usage.inputTokens > 500, "the overshoot is that one call");

    // A resume with nothing left: the held call is checked again, and the agent paused again.
    await s.service.resume(root, "agent");
    let denials = 0;
    await s.eventWhen(runId, (e) => e.type === "budget_denied" && ++denials === 2, "a second refusal");
    assert.equal((await s.agentWhen(root, (a) => a.state === "paused", "paused again")).pausedBy, "budget");
    assert.equal((await s.service.getAgent(root)).usage.calls, 1, "and still nothing sent");

    const raised = await s.service.setBudget(root, { maxTokens: 1_000_000 });
    assert.equal(raised.budget.maxTokens, 1_000_000);
    assert.ok(raised.budget.remainingTokens! > 990_000);
    await new Promise((r) => setTimeout(r, 300));
    const still = await s.service.getAgent(root);
    assert.equal(still.state, "paused", "raising the cap resumes nothing");
    assert.equal(still.usage.calls, 1, "and sends nothing");

    await s.service.resume(root, "agent");
    const result = await s.service.result(root, 10);
    assert.equal(result.result, "done: one\n");
    const events = await s.events(runId);
    assert.deepEqual(
      (await s.service.getAgent(root)).usage,
      usageOf(events, [root]),
      "the view's usage is the sum of its model_usage events",
    );
    assert.equal(usageOf(events, [root]).calls, 2);
    assert.ok(
      events.some((e) => e.type === "budget_changed" && e.agentId === root),
      "the raise is recorded",
    );
  });

  it("counts every descendant's calls against each ancestor: an ancestor out of budget pauses its whole subtree; usage adds up per agent, subtree and run", async () => {
    const { runId, rootAgentId: root } = await s.service.createRun({
      // Room for one child's four calls (about 6,000 tokens with the harness's tool schemas), not for both's.
      spec: { name: "lead", script: [], maxTokens: 7_000 },
      keepAlive: true,
    });
    await s.agentWhen(root, (a) => a.state === "running", "runs");
    const script = [bash("echo a"), bash("echo b"), bash("echo c"), { text: "finished" }];
    const kids: string[] = [];
    for (const name of ["kid-1", "kid-2"])
      kids.push(
        (await s.service.spawn(runId, { parentAgentId: root, spec: { name, script }, prompt: "work" })).agentId,
      );
    for (const kid of kids)
      assert.equal(
        (await s.service.getAgent(kid)).budget.maxTokens,
        7_000,
        "a child's cap is what its parent has left",
      );

    const denied = await s.eventWhen(runId, (e) => e.type === "budget_denied", "a budget refusal", 15_000);
    assert.equal(denied.agentId, root, "the lead ran out: its children spent its tokens");
    const lead = await s.agentWhen(root, (a) => a.state === "paused", "the lead paused");
    assert.equal(lead.pausedBy, "budget");
    for (const kid of kids)
      assert.equal((await s.agentWhen(kid, (a) => a.state === "paused", "child paused")).pausedBy, "cascade");
    const spent = await s.service.getAgent(root);
    assert.ok(spent.subtreeUsage.inputTokens + spent.subtreeUsage.outputTokens >= 7_000);
    assert.ok(spent.subtreeUsage.calls < 8, "held before the children finished");

    await s.service.setBudget(root, { maxTokens: 1_000_000 });
    await s.service.resume(root, "subtree");
    for (const kid of kids) assert.equal((await s.service.result(kid, 15)).result, "finished");

    const events = await s.events(runId);
    const views = new Map<string, AgentView>(s.service.getRun(runId).agents.map((a) => [a.agentId, a]));
    for (const kid of kids) {
      assert.deepEqual(
        views.get(kid)!.usage,
        usageOf(events, [kid]),
        `${kid}'s usage is the sum of its model_usage events`,
      );
      assert.equal(views.get(kid)!.usage.calls, 4);
      assert.deepEqual(views.get(kid)!.subtreeUsage, views.get(kid)!.usage, "a leaf's subtree is itself");
    }
    assert.deepEqual(views.get(root)!.usage, usageOf(events, [root]));
    assert.deepEqual(
      views.get(root)!.subtreeUsage,
      usageOf(events, [root, ...kids]),
      "the lead's subtree: it and both children",
    );
    assert.deepEqual(s.service.getRun(runId).usage, usageOf(events, [root, ...kids]), "the run: every agent");
    assert.ok(views.get(root)!.subtreeUsage.costUsd > 0, "scripted calls are priced");
  });

  it("keeps a child's caps within what its parent has left, refusing raises past it with 409", async () => {
    const { runId, rootAgentId: root } = await s.service.createRun({
      spec: { name: "lead", script: [], maxCostUsd: 0.5, maxTokens: 10_000 },
      keepAlive: true,
    });
    await s.agentWhen(root, (a) => a.state === "running", "runs");
    const { agentId: kid } = await s.service.spawn(runId, {
      parentAgentId: root,
      spec: { name: "kid", script: [], maxTokens: 1_000_000 },
      budget: { maxCostUsd: 0.1 },
      keepAlive: true,
    });
    const view = await s.service.getAgent(kid);
    assert.equal(view.budget.maxTokens, 10_000, "asked for more than the parent has: given what it has");
    assert.equal(view.budget.maxCostUsd, 0.1, "asked for less: given that");
    await rejectsWithCode(() => s.service.setBudget(kid, { maxTokens: 10_001 }), "BUDGET_EXCEEDS_PARENT");
    await rejectsWithCode(() => s.service.setBudget(kid, { maxCostUsd: 0.6 }), "BUDGET_EXCEEDS_PARENT");
    assert.equal((await s.service.setBudget(kid, { maxCostUsd: 0.5 })).budget.maxCostUsd, 0.5);
    assert.equal(
      (await s.service.setBudget(root, { maxTokens: 50 })).budget.maxTokens,
      50,
      "a root's caps are the operator's alone",
    );
    assert.equal(
      (await s.service.getAgent(kid)).budget.remainingTokens,
      50,
      "what is left is bounded by every ancestor",
    );
    const lifted = await s.service.setBudget(kid, { maxTokens: null });
    assert.deepEqual(
      [lifted.budget.maxTokens, lifted.budget.remainingTokens, lifted.budget.maxCostUsd],
      [null, 50, 0.5],
      "null lifts its own cap; its parent's still bounds it",
    );
    await rejectsWithCode(() => s.service.setBudget("a_0000000000000000", { maxTokens: 1 }), "AGENT_NOT_FOUND");
  });

  it("gives a child an agent spawns with spawn_agent the spend caps it asks for, within its own", async () => {
    const spawnStep = {
      tool: "spawn_agent",
      args: { spec: { name: "kid", script: [] }, budget: { maxTokens: 7_000, maxCostUsd: 5 }, prompt: "hi" },
    };
    const { runId, rootAgentId: root } = await s.service.createRun({
      spec: { name: "lead", script: [spawnStep, { text: "spawned" }], maxCostUsd: 1 },
      prompt: "go",
    });
    const spawned = await s.eventWhen(runId, (e) => e.type === "agent_spawned" && e.agentId !== root, "the child");
    const kid = await s.service.getAgent(spawned.agentId!);
    assert.equal(kid.budget.maxTokens, 7_000, "asked for, and the lead has no token cap");
    assert.ok(kid.budget.maxCostUsd! < 1, "asked for $5: given what the lead had left of its $1");
  });
});
