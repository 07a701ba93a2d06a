import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";
import { echoSpec, type MemoryService, startMemoryService } from "../support/memory-service.ts";

const signal = () => AbortSignal.timeout(1_000);

describe("service: restart on the same ledger, results and runtime", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  it("gives every live agent back in its state, still controllable; settles what finished while down; ends the vanished as lost", async () => {
    const { runId, rootAgentId: root } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
    const spawn = async (name: string, script: ScriptStep[], prompt?: string) =>
      (await s.service.spawn(runId, { parentAgentId: root, spec: { name, script }, prompt, keepAlive: true })).agentId;
    const paused = await spawn("paused", []);
    const vanishing = await spawn("vanishing", []);
    const busy = await spawn("busy", [{ text: "late answer", delayMs: 400 }], "go");
    // Its await_result is a host call still unanswered when the service stops.
    const awaiting = await spawn(
      "awaiting",
      [{ tool: "await_result", args: { agentId: busy, waitSeconds: 10 } }, { text: "{{lastToolResult}}" }],
      "wait",
    );
    for (const id of [root, paused, vanishing]) await s.agentWhen(id, (v) => v.state === "running", "runs");
    await s.service.pause(paused, "agent");
    await s.eventWhen(runId, (e) => e.type === "tool_start" && e.agentId === awaiting, "awaiting's host call");
    const sandboxOf = async (agentId: string) => (await s.service.getAgent(agentId)).sandboxId!;
    const vanishingSandbox = await sandboxOf(vanishing);
    const orphan = randomUUID();

    const restored = await s.restart(async () => {
      await s.runtime.close(vanishingSandbox, signal());
      await s.runtime.provision(
        { sandboxId: orphan, runId: "r_orphan", agentId: "a_orphan", spec: echoSpec("orphan") },
        signal(),
      );
    });
    assert.equal(restored, 1);

    const pausedView = await s.service.getAgent(paused);
    assert.deepEqual([pausedView.state, pausedView.pausedBy], ["paused", "operator"]);
    assert.equal((await s.runtime.inspect(pausedView.sandboxId!, signal()))?.status, "frozen");
    await s.service.resume(paused, "agent");
    await s.service.prompt(paused, "awake");
    assert.equal((await s.service.result(paused, 5)).result, "awake");

    await s.service.prompt(root, "still here");
    assert.equal((await s.service.result(root, 5)).result, "still here");

    assert.equal((await s.service.result(busy, 5)).result, "late answer");
    assert.match(
      (await s.service.result(awaiting, 5)).result!,
      /late answer/,
      "the host call was answered by the new service",
    );
    const settledBusy = (await s.events(runId)).filter((e) => e.type === "handle_settled" && e.agentId === busy);
    assert.equal(settledBusy.length, 1, "the turn settles once");

    const lost = await s.agentWhen(vanishing, (v) => v.state === "done", "ends");
    assert.equal(lost.outcome, "lost");
    const ended = await s.eventWhen(
      runId,
      (e) => e.type === "agent_ended" && e.agentId === vanishing,
      "ending the vanished agent",
    );
    assert.match(String(ended.data.error), /lost/);
    assert.equal(await s.runtime.inspect(orphan, signal()), undefined, "a sandbox no agent owns is closed");

    await s.service.deleteRun(runId);
    assert.deepEqual(
      (await s.runtime.list(signal())).filter((i) => i.runId === runId),
      [],
    );
  });
});
