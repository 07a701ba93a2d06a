import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { echoSpec, type MemoryService, rejectsWithCode, startMemoryService } from "../support/memory-service.ts";

describe("service: runs, turns and results", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  it("creates a run whose root provisions, runs its prompt and settles with the turn's text", async () => {
    const created = await s.service.createRun({
      spec: {
        name: "root",
        script: [
          { tool: "bash", args: { command: "echo hello > note.txt; cat note.txt" } },
          { text: "said {{lastToolResult}}" },
        ],
      },
      prompt: "go",
    });
    assert.equal(created.state, "provisioning");
    const result = await s.service.result(created.rootAgentId, 5);
    assert.deepEqual(result, {
      agentId: created.rootAgentId,
      state: "settled",
      outcome: "success",
      resultRef: `fs://${created.rootAgentId}/result.md`,
      result: "said hello\n",
    });

    const root = await s.agentWhen(created.rootAgentId, (a) => a.state === "done", "ends once idle with no children");
    assert.equal(root.outcome, "success");
    const types = (await s.events(created.runId)).map((e) => e.type);
    for (const type of [
      "run_started",
      "agent_spawned",
      "agent_provisioned",
      "agent_start",
      "tool_start",
      "tool_end",
      "agent_end",
      "handle_settled",
      "agent_ended",
    ])
      assert.ok(types.includes(type), `${type} in ${types}`);
    assert.ok(types.indexOf("handle_settled") < types.indexOf("agent_ended"));
    assert.deepEqual(await s.runtime.list(AbortSignal.timeout(1000)), [], "an ended agent's sandbox is closed");
  });

  it("keeps a keepAlive root idle and live; each prompt is a new turn with a new result", async () => {
    const { runId, rootAgentId } = await s.service.createRun({ spec: echoSpec("echo"), keepAlive: true });
    await s.agentWhen(rootAgentId, (a) => a.state === "running", "runs once provisioned");
    assert.equal((await s.service.result(rootAgentId, 0)).state, "pending", "no prompt yet, no result");

    await s.service.prompt(rootAgentId, "first");
    assert.equal((await s.service.result(rootAgentId, 5)).result, "first");
    await s.service.prompt(rootAgentId, "second");
    let turns = 0;
    await s.eventWhen(
      runId,
      (e) => e.type === "handle_settled" && e.agentId === rootAgentId && ++turns === 2,
      "settling the second turn",
    );
    assert.equal((await s.service.result(rootAgentId, 0)).result, "second");
    const view = await s.service.getAgent(rootAgentId);
    assert.equal(view.state, "running");
    assert.equal(view.sessionStats?.userMessages, 2, "the harness answers with the session's stats");
  });

  it("holds a result request open while the turn runs, and answers pending when the wait runs out", async () => {
    const { rootAgentId } = await s.service.createRun({
      spec: { name: "slow", script: [{ text: "late", delayMs: 400 }] },
      prompt: "go",
    });
    const pending = await s.service.result(rootAgentId, 0);
    assert.deepEqual(pending, { agentId: rootAgentId, state: "pending", outcome: null, resultRef: null, result: null });
    const started = Date.now();
    const settled = await s.service.result(rootAgentId, 5);
    assert.equal(settled.result, "late");
    assert.ok(Date.now() - started < 3_000, "answered when the turn settled, not at the end of the wait");
  });

  it("deletes a run: every live agent ends aborted, its sandboxes close, its ledger and snapshot stay", async () => {
    const { runId, rootAgentId } = await s.service.createRun({
      spec: { name: "root", script: [{ tool: "bash", args: { command: "sleep 30" } }] },
      prompt: "go",
      keepAlive: true,
    });
    const child = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: { name: "kid", script: [] },
      keepAlive: true,
    });
    await s.agentWhen(child.agentId, (a) => a.state === "running", "runs");
    const before = s.ledger.lastSeq(runId);

    await s.service.deleteRun(runId);
    const snapshot = s.service.getRun(runId);
    assert.deepEqual(
      snapshot.agents.map((a) => [a.state, a.outcome]),
      [
        ["aborted", "aborted"],
        ["aborted", "aborted"],
      ],
    );
    assert.ok(snapshot.asOf > before);
    assert.deepEqual(
      (await s.runtime.list(AbortSignal.timeout(1000))).filter((i) => i.runId === runId),
      [],
    );
    assert.equal((await s.events(runId))[0]?.type, "run_started", "the ledger is kept");
    await rejectsWithCode(() => s.service.prompt(rootAgentId, "more"), "AGENT_NOT_LIVE");
  });

  it("answers unknown runs and agents with 404 codes, ended agents with 409", async () => {
    assert.throws(
      () => s.service.getRun("r_missing"),
      (err) => isSwarmError(err, "RUN_NOT_FOUND"),
    );
    await rejectsWithCode(() => s.service.deleteRun("r_missing"), "RUN_NOT_FOUND");
    await rejectsWithCode(() => s.service.getAgent("a_missing"), "AGENT_NOT_FOUND");
    await rejectsWithCode(() => s.service.result("a_missing", 0), "AGENT_NOT_FOUND");
    await rejectsWithCode(() => s.service.prompt("a_missing", "hi"), "AGENT_NOT_FOUND");
    assert.equal(s.service.hasRun("r_missing"), false);

    const { rootAgentId } = await s.service.createRun({ spec: echoSpec("once"), prompt: "bye" });
    await s.agentWhen(rootAgentId, (a) => a.state === "done", "ends after its turn");
    await rejectsWithCode(() => s.service.prompt(rootAgentId, "again"), "AGENT_NOT_LIVE");
    await rejectsWithCode(() => s.service.pause(rootAgentId, "agent"), "AGENT_NOT_LIVE");
  });
});
