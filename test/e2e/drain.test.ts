/**
 * Drain over HTTP with scripted agents: `stop` with `mode: "drain"` lets the running turns finish,
 * refuses new work, and ends the members leaves first as `done`; a drain past its deadline falls
 * back to abort. Runs on the simulated runtime (or `SWARM_E2E_RUNTIME`); across a daemon SIGKILL it
 * is test/faults/drain-sigkill.test.ts, on the process and docker runtimes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { openEvents } from "../support/sse-client.ts";

describe(`drain (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  const events = async (runId: string, type: string, agentId?: string): Promise<Json[]> =>
    (await d.ledger.read(runId, 0)).filter((e) => e.type === type && (agentId === undefined || e.agentId === agentId));

  /** Wait until the agent's turn is under way (its harness reported the turn's start). */
  async function busy(runId: string, agentId: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    while ((await events(runId, "turn_start", agentId)).length === 0) {
      if (Date.now() > deadline) throw new Error(`agent ${agentId} never started a turn`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function root(script: Json[], prompt?: string) {
    const created = await d.call("POST", "/runs", {
      spec: { name: "drained", script },
      keepAlive: true,
      ...(prompt ? { prompt } : {}),
    });
    assert.equal(created.status, 202);
    return { runId: created.body.runId as string, agentId: created.body.rootAgentId as string };
  }

  async function child(runId: string, parentAgentId: string, script: Json[], prompt: string) {
    const spawned = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId,
      spec: { name: "leaf", script },
      prompt,
      keepAlive: true,
    });
    assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
    return spawned.body.agentId as string;
  }

  const endedOf = async (runId: string, agentId: string) => (await events(runId, "agent_ended", agentId))[0];

  it("a busy agent finishes its turn, takes no new work meanwhile, and ends done with the turn's result", async () => {
    const { runId, agentId } = await root([{ text: "finished slowly", delayMs: 1_500 }], "work");
    await busy(runId, agentId);
    const stream = await openEvents(d.url, runId);
    const drained = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain" });
    assert.equal(drained.status, 202);
    assert.deepEqual(drained.body, { results: [{ agentId, outcome: "applied" }] });

    const view = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.equal(view.draining, true);
    assert.equal(view.state, "running", "still finishing its turn");
    for (const [path, body] of [
      [`/agents/${agentId}/prompt`, { text: "more" }],
      [`/agents/${agentId}/steer`, { message: "faster" }],
      [`/runs/${runId}/agents`, { parentAgentId: agentId, spec: { name: "late", script: [] } }],
    ] as const) {
      const refused = await d.call("POST", path, body);
      assert.equal(refused.status, 409, path);
      assert.match(refused.body.error, /draining/, path);
    }

    await waitForState(d, agentId, "done", 60_000);
    const ended = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.equal(ended.outcome, "success");
    assert.equal(ended.draining, undefined);
    assert.equal(
      (await d.call("GET", `/agents/${agentId}/result`)).body.result,
      "finished slowly",
      "the turn ran to its end",
    );
    const end = await endedOf(runId, agentId);
    assert.equal(end.data.reason, "drained");
    const marks = await events(runId, "agent_draining", agentId);
    assert.equal(marks.length, 1);
    assert.ok(Math.abs(marks[0].data.deadline - marks[0].at - 600_000) < 5_000, "the default deadline: 10 minutes");
    // On the stream: the mark, the turn's result, then the end.
    const streamed = await stream.waitFor((m) => m.event === "agent_ended" && m.data.agentId === agentId, 10_000);
    stream.close();
    const seen = stream.messages.filter((m) => m.data.agentId === agentId).map((m) => m.event);
    assert.deepEqual(
      seen.filter((e) => ["agent_draining", "handle_settled", "agent_ended"].includes(e)),
      ["agent_draining", "handle_settled", "agent_ended"],
    );
    assert.equal(streamed.data.reason, "drained");
  });

  it("an agent's own spawn_agent under a drain fails with a tool error saying so", async () => {
    const { runId, agentId } = await root(
      [
        { tool: "bash", args: { command: "sleep 1" } },
        { tool: "spawn_agent", args: { spec: { name: "late", script: [] } } },
        { text: "{{lastToolResult}}" },
      ],
      "work",
    );
    await busy(runId, agentId);
    await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain" });
    await waitForState(d, agentId, "done", 60_000);
    assert.match(
      (await d.call("GET", `/agents/${agentId}/result`)).body.result,
      /is draining: it takes no new prompt, steer or spawn/,
    );
    assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 1, "no child was made");
  });

  it("an idle agent ends at once as done", async () => {
    const { agentId } = await root([{ text: "first" }], "one");
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "first");
    const drained = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain" });
    assert.deepEqual(drained.body.results, [{ agentId, outcome: "applied" }]);
    await waitForState(d, agentId, "done", 30_000);
    assert.equal((await d.call("GET", `/agents/${agentId}`)).body.outcome, "success");
    const again = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain" });
    assert.deepEqual(again.body.results, [{ agentId, outcome: "noop" }], "an ended agent keeps its end");
  });

  it("a subtree with busy leaves: marked parents first, the leaves finish their turns, the root ends last", async () => {
    const { runId, agentId } = await root([]);
    await waitForState(d, agentId, "running");
    const leaves = [
      await child(runId, agentId, [{ text: "leaf one done", delayMs: 1_000 }], "one"),
      await child(runId, agentId, [{ text: "leaf two done", delayMs: 1_500 }], "two"),
    ];
    for (const leaf of leaves) await busy(runId, leaf);

    const drained = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain", scope: "subtree" });
    assert.equal(drained.status, 202);
    assert.deepEqual(
      drained.body.results.map((r: Json) => r.agentId),
      [agentId, ...leaves],
      "parents first",
    );
    assert.ok(drained.body.results.every((r: Json) => r.outcome === "applied"));
    const marks = await events(runId, "agent_draining");
    assert.deepEqual(
      marks.map((e) => e.agentId),
      [agentId, ...leaves],
    );
    assert.ok(marks.every((e) => e.data.subtree === true));
    assert.equal((await d.call("GET", `/agents/${agentId}`)).body.state, "running", "the root waits for its children");

    await waitForState(d, agentId, "done", 60_000);
    for (const [i, leaf] of leaves.entries()) {
      const view = (await d.call("GET", `/agents/${leaf}`)).body;
      assert.equal(view.state, "done");
      assert.equal(view.outcome, "success");
      assert.equal(
        (await d.call("GET", `/agents/${leaf}/result`)).body.result,
        i === 0 ? "leaf one done" : "leaf two done",
      );
    }
    const ends = await events(runId, "agent_ended");
    assert.ok(ends.every((e) => e.data.reason === "drained"));
    assert.equal(ends.at(-1).agentId, agentId, "leaves first: the root ends last");
  });

  it("past its deadline a drain falls back to abort (reason drain-timeout)", async () => {
    const { runId, agentId } = await root([{ text: "never in time", delayMs: 120_000 }], "slow");
    await busy(runId, agentId);
    const drained = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain", drainTimeoutMs: 1_000 });
    assert.deepEqual(drained.body.results, [{ agentId, outcome: "applied" }]);
    const mark = (await events(runId, "agent_draining", agentId))[0];
    assert.ok(mark.data.deadline >= Date.now() - 5_000 && mark.data.deadline <= Date.now() + 1_000);
    await waitForState(d, agentId, "aborted", 30_000);
    const end = await endedOf(runId, agentId);
    assert.equal(end.data.outcome, "aborted");
    assert.equal(end.data.reason, "drain-timeout");
  });

  it("a paused idle agent ends without being resumed; a child waiting for inputs never starts", async () => {
    const { runId, agentId } = await root([{ text: "first" }], "one");
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "first");
    const blocker = await child(runId, agentId, [{ text: "blocker", delayMs: 120_000 }], "block");
    const waiting = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: agentId,
      spec: { name: "waiter", script: [{ text: "x" }] },
      prompt: "x",
      waitFor: [blocker],
    });
    assert.equal(waiting.body.state, "spawning");
    assert.equal((await d.call("POST", `/agents/${agentId}/pause`, {})).status, 202);
    const drained = await d.call("POST", `/agents/${agentId}/stop`, { mode: "drain", scope: "subtree" });
    assert.equal(drained.status, 202);
    await waitForState(d, waiting.body.agentId, "aborted", 30_000);
    assert.equal((await endedOf(runId, waiting.body.agentId)).data.reason, "drained");
    // The root waits for its busy child; once that is aborted, it ends, paused as it is.
    assert.equal((await d.call("GET", `/agents/${agentId}`)).body.state, "paused");
    await d.call("POST", `/agents/${blocker}/stop`, {});
    await waitForState(d, agentId, "done", 30_000);
    assert.equal((await endedOf(runId, agentId)).data.reason, "drained");
  });
});
