/**
 * GET /runs/:runId/timeline over HTTP with scripted agents: each agent's activity from its spawn to
 * its end (provisioning, turns, idle, paused, hibernated, waiting for approval, draining), spans
 * that meet end to end, the fold's status at `asOf`, and the 404s. The fold itself is shared with the
 * console (test/console/run-state.test.ts folds the stream after `asOf` with it).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { asleep } from "../support/agent-view.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { until } from "../support/poll.ts";

const HIBERNATE_AFTER_MS = 300;

describe("GET /runs/:runId/timeline", () => {
  /** `d` never hibernates its agents; `sleepy`'s hibernate after 300 ms idle. */
  let plain: Daemon;
  let sleepy: Daemon;
  let d: Daemon;
  before(async () => {
    plain = await startDaemon();
    sleepy = await startDaemon({ hibernateAfterMs: HIBERNATE_AFTER_MS });
    d = plain;
  });
  after(async () => {
    await plain?.stop();
    await sleepy?.stop();
  });

  const timeline = async (runId: string) => {
    const answer = await d.call("GET", `/runs/${runId}/timeline`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  };
  const of = (body: Json, agentId: string) => body.agents.find((a: Json) => a.agentId === agentId);
  const activities = (agent: Json) => agent.spans.map((s: Json) => s.activity);
  /** Idle slivers between a start and a turn are real but brief: compared without them. */
  const busy = (agent: Json) => activities(agent).filter((a: string) => a !== "idle");

  it("tells each agent's activity from spawn to end, spans meeting end to end, in spawn order", async () => {
    const run = (
      await d.call("POST", "/runs", {
        spec: { name: "root", script: [{ text: "first" }, { text: "second" }] },
        prompt: "go",
        keepAlive: true,
      })
    ).body;
    assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body.result, "first");
    const child = (
      await d.call("POST", `/runs/${run.runId}/agents`, {
        parentAgentId: run.rootAgentId,
        spec: { name: "kid", script: [] },
        keepAlive: true,
      })
    ).body.agentId;
    await waitForState(d, child, "running");
    assert.equal((await d.call("POST", `/agents/${child}/pause`, {})).status, 202);
    await waitForState(d, child, "paused");
    assert.equal((await d.call("DELETE", `/runs/${run.runId}`)).status, 204);

    const body = await timeline(run.runId);
    const snapshot = (await d.call("GET", `/runs/${run.runId}`)).body;
    assert.equal(body.runId, run.runId);
    assert.equal(body.asOf, snapshot.asOf);
    assert.deepEqual(
      body.agents.map((a: Json) => a.agentId),
      [run.rootAgentId, child],
    );
    const root = of(body, run.rootAgentId);
    assert.deepEqual(busy(root), ["provisioning", "turn"]);
    assert.equal(activities(root).at(-1), "idle", "idle after its turn, until the run was deleted");
    assert.deepEqual(activities(of(body, child)), ["provisioning", "idle", "paused"]);
    for (const agent of body.agents) {
      const view = snapshot.agents.find((a: Json) => a.agentId === agent.agentId);
      assert.equal(agent.spans[0].from, view.createdAt, "from its spawn");
      assert.equal(agent.spans.at(-1).to, view.endedAt, "to its end");
      for (let i = 1; i < agent.spans.length; i++) assert.equal(agent.spans[i].from, agent.spans[i - 1].to);
      assert.deepEqual(agent.status, { state: "ended", turn: false, approvals: 0, hibernated: false, draining: false });
    }
  });

  it("shows waiting for approval, hibernated and draining while they last, the current span open", async () => {
    d = sleepy;
    const run = (
      await d.call("POST", "/runs", {
        spec: {
          name: "asker",
          approve: [{ tool: "bash" }],
          script: [{ tool: "bash", args: { command: "echo ok" } }, { text: "done" }],
        },
        prompt: "ask",
        keepAlive: true,
      })
    ).body;
    await until(
      async () => (await d.call("GET", `/agents/${run.rootAgentId}`)).body.pendingPermissions.length === 1,
      "the request pending",
      60_000,
    );
    let root = of(await timeline(run.runId), run.rootAgentId);
    assert.deepEqual(busy(root), ["provisioning", "turn", "approval"]);
    assert.equal(root.spans.at(-1).to, null, "what it does now has no end yet");
    assert.deepEqual(root.status, { state: "running", turn: true, approvals: 1, hibernated: false, draining: false });

    const [requestId] = (await d.call("GET", `/agents/${run.rootAgentId}`)).body.pendingPermissions;
    await d.call("POST", `/agents/${run.rootAgentId}/permissions/${requestId}`, { decision: "allow" });
    await asleep(d.call, run.rootAgentId);
    root = of(await timeline(run.runId), run.rootAgentId);
    assert.deepEqual(busy(root), ["provisioning", "turn", "approval", "turn", "hibernated"]);

    // A drain of a busy agent: draining until its turn settles, then the end.
    const slow = (
      await d.call("POST", `/runs/${run.runId}/agents`, {
        parentAgentId: run.rootAgentId,
        spec: { name: "slow", script: [{ text: "in no hurry", delayMs: 1_500 }] },
        prompt: "take your time",
        keepAlive: true,
      })
    ).body.agentId;
    await until(
      async () => activities(of(await timeline(run.runId), slow)).at(-1) === "turn",
      "the slow agent in its turn",
      60_000,
    );
    assert.equal((await d.call("POST", `/agents/${slow}/stop`, { mode: "drain" })).status, 202);
    assert.equal(activities(of(await timeline(run.runId), slow)).at(-1), "draining");
    await waitForState(d, slow, "done");
    const drained = of(await timeline(run.runId), slow);
    assert.deepEqual(busy(drained), ["provisioning", "turn", "draining"]);
    assert.notEqual(drained.spans.at(-1).to, null, "ended");
    await d.call("DELETE", `/runs/${run.runId}`);
  });

  it("answers 404 for a run that does not exist or a malformed id", async () => {
    d = plain;
    for (const path of ["/runs/r_00000000000000ff/timeline", "/runs/nope/timeline"]) {
      const answer = await d.call("GET", path);
      assert.equal(answer.status, 404, path);
      assert.match(answer.body.error, /^Run (r_00000000000000ff|nope) does not exist\.$/);
    }
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    assert.match(
      metrics,
      /swarmd_control_request_duration_seconds_count\{operation="get_timeline",status="4xx"\} 2/,
      "timed under its own operation",
    );
  });
});
