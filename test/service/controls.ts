import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { LedgerEvent } from "../../src/ledger/ledger.ts";
import {
  echoSpec,
  keptTree,
  type MemoryService,
  rejectsWithCode,
  startMemoryService,
} from "../support/memory-service.ts";

const signal = () => AbortSignal.timeout(1_000);
/** [agentId, reason] of every `agent_state_changed` to `to`, in ledger order. */
const changesTo = (events: LedgerEvent[], to: string) =>
  events.filter((e) => e.type === "agent_state_changed" && e.data.to === to).map((e) => [e.agentId, e.data.reason]);

describe("service: pause, resume and stop", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  it("pauses an agent in the middle of its turn: frozen, silent, and the turn finishes after resume", async () => {
    const { runId, rootAgentId } = await s.service.createRun({
      spec: {
        name: "worker",
        script: [{ tool: "bash", args: { command: "sleep 0.3; echo done" } }, { text: "{{lastToolResult}}" }],
      },
      prompt: "go",
      keepAlive: true,
    });
    await s.eventWhen(runId, (e) => e.type === "tool_start", "starting the tool");
    assert.deepEqual(await s.service.pause(rootAgentId, "agent"), {
      results: [{ agentId: rootAgentId, outcome: "applied" }],
    });
    const view = await s.service.getAgent(rootAgentId);
    assert.deepEqual([view.state, view.pausedBy, view.sessionStats], ["paused", "operator", undefined]);
    assert.equal((await s.runtime.inspect(view.sandboxId!, signal()))?.status, "frozen");
    assert.deepEqual(await s.service.pause(rootAgentId, "agent"), {
      results: [{ agentId: rootAgentId, outcome: "noop" }],
    });

    const quiet = s.ledger.lastSeq(runId);
    await sleep(500); // longer than the tool's sleep: nothing may come of it while paused
    assert.equal(s.ledger.lastSeq(runId), quiet, "a paused agent's turn records nothing");
    assert.equal((await s.service.result(rootAgentId, 0)).state, "pending");

    assert.deepEqual(await s.service.resume(rootAgentId, "agent"), {
      results: [{ agentId: rootAgentId, outcome: "applied" }],
    });
    assert.equal((await s.service.getAgent(rootAgentId)).state, "running");
    assert.equal((await s.runtime.inspect(view.sandboxId!, signal()))?.status, "running");
    assert.equal((await s.service.result(rootAgentId, 5)).result, "done\n");
    await rejectsWithCode(() => s.service.resume(rootAgentId, "agent"), "AGENT_NOT_PAUSED");
  });

  it("pauses a subtree parents first and resumes it children first, the named agent last, one depth at a time", async () => {
    const t = await keptTree(s);
    const paused = await s.service.pause(t.root, "subtree");
    assert.deepEqual(
      paused.results,
      [t.root, t.a, t.b, t.a1].map((agentId) => ({ agentId, outcome: "applied" })),
    );
    const byId = new Map(s.service.getRun(t.runId).agents.map((a) => [a.agentId, a]));
    assert.deepEqual(
      [t.root, t.a, t.a1, t.b].map((id) => [byId.get(id)?.state, byId.get(id)?.pausedBy]),
      [
        ["paused", "operator"],
        ["paused", "cascade"],
        ["paused", "cascade"],
        ["paused", "cascade"],
      ],
    );

    const resumed = await s.service.resume(t.root, "subtree");
    assert.deepEqual(
      resumed.results.map((r) => r.agentId),
      [t.a1, t.a, t.b, t.root],
    );
    const events = await s.events(t.runId);
    // The members of one depth get the control together: their events come in any order.
    const pausedOrder = changesTo(events, "paused");
    assert.deepEqual(pausedOrder[0], [t.root, "operator"]);
    assert.deepEqual(
      pausedOrder.slice(1, 3).sort(),
      [
        [t.a, "cascade"],
        [t.b, "cascade"],
      ].sort(),
    );
    assert.deepEqual(pausedOrder.slice(3), [[t.a1, "cascade"]]);
    const runningOrder = changesTo(events, "running")
      .slice(-4)
      .map(([id]) => id);
    assert.deepEqual(
      [runningOrder[0], runningOrder.slice(1, 3).sort(), runningOrder[3]],
      [t.a1, [t.a, t.b].sort(), t.root],
    );
    const sandboxes = await s.runtime.list(signal());
    assert.ok(sandboxes.filter((i) => i.runId === t.runId).every((i) => i.status === "running"));
  });

  it("pauses a child spawned under a paused parent as soon as it is forked", async () => {
    const { runId, rootAgentId } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
    await s.agentWhen(rootAgentId, (v) => v.state === "running", "runs");
    const dep = await s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("dep"), keepAlive: true });
    const parent = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: echoSpec("parent"),
      keepAlive: true,
    });
    await s.agentWhen(parent.agentId, (v) => v.state === "running", "runs");
    const waiting = await s.service.spawn(runId, {
      parentAgentId: parent.agentId,
      spec: echoSpec("waiting"),
      keepAlive: true,
      waitFor: [dep.agentId],
    });
    const paused = await s.service.pause(parent.agentId, "subtree");
    assert.deepEqual(paused.results, [
      { agentId: parent.agentId, outcome: "applied" },
      { agentId: waiting.agentId, outcome: "applied" },
    ]);
    assert.equal((await s.service.getAgent(waiting.agentId)).state, "spawning");

    await s.service.prompt(dep.agentId, "done");
    const view = await s.agentWhen(waiting.agentId, (v) => v.state === "paused", "joins the pause once forked");
    assert.equal(view.pausedBy, "cascade");
    assert.equal((await s.runtime.inspect(view.sandboxId!, signal()))?.status, "frozen");
  });

  it("stops a subtree leaves first, closes its sandboxes and leaves siblings alone", async () => {
    const t = await keptTree(s);
    const stopped = await s.service.stop(t.a, { mode: "abort", scope: "subtree" });
    assert.deepEqual(stopped.results, [
      { agentId: t.a1, outcome: "applied" },
      { agentId: t.a, outcome: "applied" },
    ]);
    const ended = (await s.events(t.runId))
      .filter((e) => e.type === "agent_ended")
      .map((e) => [e.agentId, e.data.outcome]);
    assert.deepEqual(ended, [
      [t.a1, "aborted"],
      [t.a, "aborted"],
    ]);
    assert.equal((await s.service.getAgent(t.b)).state, "running", "a sibling is untouched");
    const left = (await s.runtime.list(signal())).filter((i) => i.runId === t.runId).map((i) => i.agentId);
    assert.deepEqual(left.sort(), [t.root, t.b].sort());
  });

  it("keeps the outcome of an agent that had already finished when it is stopped", async () => {
    const { rootAgentId } = await s.service.createRun({ spec: echoSpec("once"), prompt: "hi" });
    await s.agentWhen(rootAgentId, (v) => v.state === "done", "ends after its turn");
    assert.deepEqual(await s.service.stop(rootAgentId, { mode: "abort", scope: "agent" }), {
      results: [{ agentId: rootAgentId, outcome: "noop" }],
    });
    assert.equal((await s.service.getAgent(rootAgentId)).outcome, "success");
  });

  it("answers controls on unknown agents with 404 and on ended ones with 409", async () => {
    for (const control of [
      () => s.service.pause("a_missing", "agent"),
      () => s.service.resume("a_missing", "agent"),
      () => s.service.stop("a_missing", { mode: "abort", scope: "agent" }),
    ]) {
      await rejectsWithCode(control, "AGENT_NOT_FOUND");
    }
    const { rootAgentId } = await s.service.createRun({ spec: echoSpec("kept"), keepAlive: true });
    await s.service.stop(rootAgentId, { mode: "abort", scope: "agent" });
    await rejectsWithCode(() => s.service.pause(rootAgentId, "agent"), "AGENT_NOT_LIVE");
    await rejectsWithCode(() => s.service.resume(rootAgentId, "agent"), "AGENT_NOT_LIVE");
  });
});
