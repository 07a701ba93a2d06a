/**
 * `GET /runs` (every run, newest first, agents counted by state) and `GET /agents/:agentId/machine`
 * (the machine's state, tags and transitions) over HTTP on the simulated runtime (or `SWARM_E2E_RUNTIME`).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";

describe("run list and machine view over HTTP", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  it("lists runs newest first with their agents counted by state; limit keeps the newest", async () => {
    const first = (await d.call("POST", "/runs", { spec: { name: "older", script: [] }, prompt: "one" })).body;
    assert.equal((await d.call("GET", `/agents/${first.rootAgentId}/result?wait=60`)).body.result, "one");
    await waitForState(d, first.rootAgentId, "done");
    const second = (await d.call("POST", "/runs", { spec: { name: "newer", script: [] }, keepAlive: true })).body;
    await waitForState(d, second.rootAgentId, "running");
    const child = (
      await d.call("POST", `/runs/${second.runId}/agents`, {
        parentAgentId: second.rootAgentId,
        spec: { name: "kid", script: [] },
        keepAlive: true,
      })
    ).body;
    await waitForState(d, child.agentId, "running");

    const { runs } = (await d.call("GET", "/runs")).body;
    const ours = runs.filter((r: Json) => r.runId === first.runId || r.runId === second.runId);
    assert.deepEqual(
      ours.map((r: Json) => r.runId),
      [second.runId, first.runId],
      "newest first",
    );
    assert.deepEqual(ours[0].states, { spawning: 0, provisioning: 0, running: 2, paused: 0, done: 0, aborted: 0 });
    assert.equal(ours[0].specName, "newer");
    assert.equal(ours[0].agents, 2);
    assert.equal(ours[0].live, 2);
    assert.equal(ours[1].states.done, 1);
    assert.equal(ours[1].live, 0);
    assert.equal(typeof ours[1].usage.calls, "number");
    const limited = (await d.call("GET", "/runs?limit=1")).body.runs;
    assert.equal(limited.length, 1);
    assert.equal(limited[0].runId, runs[0].runId);
    assert.equal((await d.call("GET", "/runs?limit=0")).status, 400);
    await d.call("DELETE", `/runs/${second.runId}`);
  });

  it("shows an agent's machine: its state value, tags and the transitions that led there", async () => {
    const created = (
      await d.call("POST", "/runs", { spec: { name: "watched", script: [] }, keepAlive: true, prompt: "hi" })
    ).body;
    const agentId = created.rootAgentId;
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "hi");
    const machine = (await d.call("GET", `/agents/${agentId}/machine`)).body;
    assert.equal(machine.agentId, agentId);
    assert.equal(machine.running, true);
    assert.deepEqual(machine.value, { live: { running: { idle: "awake" } } });
    assert.deepEqual(machine.tags, ["live", "running"]);
    const values = machine.transitions.map((t: Json) => JSON.stringify(t.value));
    assert.ok(values.includes(JSON.stringify({ unforked: "provisioning" })), values.join(" "));
    assert.equal(values.at(-1), JSON.stringify({ live: { running: { idle: "awake" } } }));
    assert.ok(machine.transitions.every((t: Json) => typeof t.at === "number" && typeof t.event === "string"));
    assert.equal(machine.transitions[0].event, "xstate.init", "from its first snapshot");
    for (let i = 1; i < values.length; i++) assert.notEqual(values[i], values[i - 1], "only changes of state value");

    await d.call("POST", `/agents/${agentId}/pause`, {});
    const paused = (await d.call("GET", `/agents/${agentId}/machine`)).body;
    assert.deepEqual(paused.value, { live: "paused" });
    assert.deepEqual(paused.tags, ["live", "paused"]);
    // The pause's control took it to `pausing`; its sandbox's freeze, done, to `paused`.
    assert.deepEqual(
      paused.transitions.slice(-2).map((t: Json) => [t.event, t.value]),
      [
        ["control.pause", { live: "pausing" }],
        ["xstate.done.actor.0.agent.live.pausing", { live: "paused" }],
      ],
    );
    await d.call("POST", `/agents/${agentId}/stop`, {});
    const ended = (await d.call("GET", `/agents/${agentId}/machine`)).body;
    assert.equal(ended.value, "aborted");
    assert.deepEqual(ended.transitions.at(-1).value, "aborted");
    assert.equal((await d.call("GET", "/agents/a_00ff/machine")).status, 404);
  });
});
