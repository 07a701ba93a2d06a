import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { keptTree, type MemoryService, rejectsWithCode, startMemoryService } from "../support/memory-service.ts";

describe("service: steer", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  /** The agent's result once a turn settled after `seq` with it. */
  const nextResult = async (runId: string, agentId: string, afterSeq: number) => {
    await s.eventWhen(
      runId,
      (e) => e.seq > afterSeq && e.type === "handle_settled" && e.agentId === agentId,
      `settling a turn of ${agentId}`,
    );
    return (await s.service.result(agentId, 0)).result;
  };

  it("delivers into the running turn (steer), to an idle agent as a new turn (turn), to a paused one on resume (queued)", async () => {
    const { runId, rootAgentId: id } = await s.service.createRun({
      spec: {
        name: "worker",
        script: [{ tool: "bash", args: { command: "sleep 0.2; echo tool-done" } }, { text: "saw {{lastUserMessage}}" }],
      },
      prompt: "work",
      keepAlive: true,
    });
    await s.eventWhen(runId, (e) => e.type === "tool_start", "starting the tool");
    assert.deepEqual(await s.service.steer(id, { message: "new direction", scope: "agent" }), {
      results: [{ agentId: id, outcome: "applied" }],
      delivery: "steer",
    });
    assert.equal(
      await nextResult(runId, id, 0),
      "saw new direction",
      "the steer landed after the tool, before the next model call",
    );
    const steered = await s.eventWhen(runId, (e) => e.type === "agent_steered", "recording the steer");
    assert.equal(steered.data.message, "new direction");

    let seq = s.ledger.lastSeq(runId);
    assert.equal((await s.service.steer(id, { message: "echo this", scope: "agent" })).delivery, "turn");
    assert.equal(await nextResult(runId, id, seq), "echo this");

    await s.service.pause(id, "agent");
    seq = s.ledger.lastSeq(runId);
    assert.equal((await s.service.steer(id, { message: "after resume", scope: "agent" })).delivery, "queued");
    await s.service.resume(id, "agent");
    assert.equal(await nextResult(runId, id, seq), "after resume");
  });

  it("sends a subtree steer to the parent alone: the operator's text, its children's table, an instruction to re-plan", async () => {
    const t = await keptTree(s);
    const steered = await s.service.steer(t.root, { message: "focus on tests", scope: "subtree" });
    assert.deepEqual(steered, { results: [{ agentId: t.root, outcome: "applied" }], delivery: "turn" });
    const text = (await s.service.result(t.root, 5)).result!;
    assert.match(text, /focus on tests/);
    assert.match(text, new RegExp(`\\| ${t.a} \\| a \\| running \\|`));
    assert.match(text, new RegExp(`\\| ${t.b} \\| b \\| running \\|`));
    assert.ok(!text.includes(t.a1), "the table lists the parent's own children only");
    assert.match(text, /Re-plan/);
    for (const child of [t.a, t.a1, t.b])
      assert.equal((await s.service.result(child, 0)).state, "pending", "the children received nothing");
  });

  it("refuses a steer to an unknown agent (404) or an ended one (409)", async () => {
    await rejectsWithCode(() => s.service.steer("a_missing", { message: "x", scope: "agent" }), "AGENT_NOT_FOUND");
    const t = await keptTree(s);
    await s.service.stop(t.b, { mode: "abort", scope: "agent" });
    await rejectsWithCode(() => s.service.steer(t.b, { message: "x", scope: "agent" }), "AGENT_NOT_LIVE");
  });
});
