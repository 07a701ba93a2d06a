/**
 * The console's stream and fold, in node against a real daemon (no browser): the page's view of a
 * run is the daemon's own, event for event; a dropped connection resumes after the last seq with
 * nothing missed and nothing twice; a refused token ends following with the API's message.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { followRun, type StreamStatus } from "../../src/console/event-stream.ts";
import { LOG_BACKFILL, RunState, type StreamMessage } from "../../src/console/run-state.ts";
import { timelineAnswer } from "../../src/views/run-timeline.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { until } from "../support/poll.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

function follow(base: string, runId: string, token: string | null = null, state = new RunState(runId)) {
  const statuses: StreamStatus[] = [];
  /** Every persisted id as it arrived, before the fold drops any repeat. */
  const ids: number[] = [];
  const stop = new AbortController();
  const onMessage = (m: StreamMessage) => {
    if (m.id !== undefined) ids.push(Number(m.id));
    state.apply(m);
  };
  const done = followRun({
    base,
    runId,
    token,
    lastEventId: () => state.lastSeq,
    onMessage,
    onStatus: (s) => statuses.push(s),
    signal: stop.signal,
    backoffMs: [100],
  });
  const end = () => {
    stop.abort();
    return done;
  };
  return { state, statuses, ids, stop: end, done };
}

/** Waits until the followed state has folded everything the daemon had when asked. */
async function caughtUp(d: Daemon, state: RunState): Promise<Json> {
  let snapshot: Json;
  await until(
    async () => {
      snapshot = (await d.call("GET", `/runs/${state.view.runId}`)).body;
      return state.lastSeq === snapshot.asOf;
    },
    "the console's fold to reach the snapshot's asOf",
    30_000,
  );
  return snapshot;
}

describe("the console's event stream and fold", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  it("folds the stream into the same agents GET /runs/:runId shows, and tracks what each is doing", async () => {
    const run = (
      await d.call("POST", "/runs", {
        spec: { name: "root", script: [{ text: "slow answer", delayMs: 1500 }] },
        keepAlive: true,
        prompt: "go",
      })
    ).body;
    const followed = follow(d.url, run.runId);
    try {
      await waitForState(d, run.rootAgentId, "running");
      const child = (
        await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: run.rootAgentId,
          spec: { name: "kid", script: [] },
          keepAlive: true,
          prompt: "kid work",
        })
      ).body;
      await until(
        () => followed.state.activity.get(run.rootAgentId)?.kind === "text",
        "the root's streamed text as its activity",
        30_000,
      );
      await waitForState(d, child.agentId, "running");
      assert.equal((await d.call("POST", `/agents/${child.agentId}/pause`, {})).status, 202);
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body.result, "slow answer");
      const snapshot = await caughtUp(d, followed.state);
      assert.equal(snapshot.agents.length, 2);
      for (const agent of snapshot.agents) {
        const { queuePosition: _q, ...expected } = agent;
        assert.deepEqual(
          followed.state.agentView(agent.agentId),
          expected,
          `agent ${agent.specName} as the console folds it`,
        );
      }
      assert.deepEqual(
        followed.state.tree().map((row) => [row.record.specName, row.depth]),
        [
          ["root", 0],
          ["kid", 1],
        ],
      );
      assert.equal(followed.state.agent(child.agentId)?.pausedBy, "operator");
      assert.equal(followed.state.activity.get(run.rootAgentId), undefined, "a settled turn shows no activity");
      assert.ok(
        followed.state.log.some((e) => e.seq === null && e.type === "text"),
        "ephemeral text is in the log, without a seq",
      );
      assert.equal(followed.statuses.at(-1)?.state, "live");
    } finally {
      await followed.stop();
      await d.call("DELETE", `/runs/${run.runId}`);
    }
  });

  it("after a dropped connection resumes after the last seq: no event missed, none twice", async () => {
    const proxy = await startTcpProxy(Number(new URL(d.url).port));
    const run = (
      await d.call("POST", "/runs", { spec: { name: "resumer", script: [] }, keepAlive: true, prompt: "one" })
    ).body;
    const followed = follow(proxy.url, run.runId);
    try {
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body.result, "one");
      await caughtUp(d, followed.state);
      const before = followed.state.lastSeq;

      proxy.block(true);
      assert.ok(proxy.cutAll() >= 1, "the stream's connection was cut");
      await until(() => followed.statuses.some((s) => s.state === "reconnecting"), "a reconnecting status", 10_000);
      // The run goes on while the console is cut off.
      for (const name of ["a", "b"])
        await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: run.rootAgentId,
          spec: { name, script: [] },
          prompt: `work ${name}`,
        });
      await d.call("POST", `/agents/${run.rootAgentId}/prompt`, { text: "two" });
      await until(
        async () =>
          (await d.call("GET", `/runs/${run.runId}`)).body.agents.filter((a: Json) => a.state === "done").length === 2,
        "both children done",
        60_000,
      );
      assert.equal(followed.state.lastSeq, before, "nothing arrived while cut off");
      proxy.block(false);

      const snapshot = await caughtUp(d, followed.state);
      const seqs = followed.state.log.flatMap((e) => (e.seq === null ? [] : [e.seq]));
      const all = Array.from({ length: snapshot.asOf }, (_, i) => i + 1);
      assert.deepEqual(seqs, all, "every persisted event once, in order");
      assert.deepEqual(
        followed.ids,
        all,
        "the reconnect asked for what followed the last seq (Last-Event-ID): the daemon sent nothing twice",
      );
      for (const agent of snapshot.agents) assert.equal(followed.state.agent(agent.agentId)?.state, agent.state);
      assert.equal(followed.statuses.at(-1)?.state, "live");
    } finally {
      await followed.stop();
      await proxy.close();
      await d.call("DELETE", `/runs/${run.runId}`);
    }
  });
});

describe("the console opened from a snapshot", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  it("folds only the events after the snapshot's asOf: the same agents, usage and approvals the daemon shows", async () => {
    const run = (
      await d.call("POST", "/runs", {
        spec: {
          name: "root",
          approve: [{ tool: "bash", match: "ask" }],
          script: [{ text: "one" }, { tool: "bash", args: { command: "echo ask" } }, { text: "two" }],
        },
        keepAlive: true,
        prompt: "go",
      })
    ).body;
    assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body.result, "one");
    const kid = (
      await d.call("POST", `/runs/${run.runId}/agents`, {
        parentAgentId: run.rootAgentId,
        spec: { name: "kid", script: [] },
        keepAlive: true,
        prompt: "kid work",
      })
    ).body.agentId;
    assert.equal((await d.call("GET", `/agents/${kid}/result?wait=60`)).body.result, "kid work");
    await d.call("POST", `/agents/${run.rootAgentId}/prompt`, { text: "ask" });
    await until(
      async () => (await d.call("GET", `/agents/${run.rootAgentId}`)).body.pendingPermissions.length === 1,
      "a pending request",
      60_000,
    );

    // What the page does: the snapshot, then its pending requests, then the stream.
    const snapshot = (await d.call("GET", `/runs/${run.runId}`)).body;
    const { permissions } = (await d.call("GET", `/runs/${run.runId}/permissions`)).body;
    const state = new RunState(run.runId);
    state.load(snapshot, permissions);
    assert.equal(state.lastSeq, Math.max(0, snapshot.asOf - LOG_BACKFILL));
    assert.deepEqual(
      state.pendingPermissions().map((p) => p.agentId),
      [run.rootAgentId],
    );
    const followed = follow(d.url, run.runId, null, state);
    try {
      // The run goes on: the request answered, a second child, a pause.
      await d.call("POST", `/agents/${run.rootAgentId}/permissions/${permissions[0].requestId}`, { decision: "allow" });
      const late = (
        await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: kid,
          spec: { name: "late", script: [] },
          prompt: "late work",
        })
      ).body.agentId;
      await waitForState(d, late, "done");
      assert.equal((await d.call("POST", `/agents/${kid}/pause`, {})).status, 202);
      await waitForState(d, kid, "paused");
      await until(
        async () => (await d.call("GET", `/agents/${run.rootAgentId}/result`)).body.result === "two",
        "the root's turn after the approval settled",
        60_000,
      );
      const now = await caughtUp(d, state);
      for (const agent of now.agents) {
        const { queuePosition: _q, ...expected } = agent;
        assert.deepEqual(state.agentView(agent.agentId), expected, `agent ${agent.specName}`);
      }
      assert.deepEqual(state.view.usage, now.usage, "no model call counted twice");
      assert.deepEqual(state.pendingPermissions(), []);
      assert.deepEqual(
        state.tree().map((row) => [row.record.specName, row.depth]),
        [
          ["root", 0],
          ["kid", 1],
          ["late", 2],
        ],
      );
      const logged = state.log.flatMap((e) => (e.seq === null ? [] : [e.seq]));
      assert.deepEqual(
        logged,
        Array.from({ length: now.asOf }, (_, i) => i + 1),
        "the log has the events before the snapshot too (its backfill), each once",
      );
      assert.equal(state.folded, now.asOf - snapshot.asOf, "only the events after the snapshot were folded");
    } finally {
      await followed.stop();
      await d.call("DELETE", `/runs/${run.runId}`);
    }
  });

  it("goes on from GET /runs/:runId/timeline with the stream, to what the route answers later", async () => {
    const run = (
      await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true, prompt: "first" })
    ).body;
    const state = new RunState(run.runId);
    const followed = follow(d.url, run.runId, null, state);
    try {
      await caughtUp(d, state);
      state.wantTimeline();
      const asked = (await d.call("GET", `/runs/${run.runId}/timeline`)).body;
      // Events the stream brings while the answer is on its way are kept, then folded after it.
      const kid = (
        await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: run.rootAgentId,
          spec: { name: "kid", script: [] },
          keepAlive: true,
        })
      ).body.agentId;
      await waitForState(d, kid, "running");
      await caughtUp(d, state);
      state.setTimeline(asked);
      assert.equal((await d.call("POST", `/agents/${kid}/pause`, {})).status, 202);
      await waitForState(d, kid, "paused");
      await d.call("POST", `/agents/${run.rootAgentId}/prompt`, { text: "second" });
      await until(
        async () => (await d.call("GET", `/agents/${run.rootAgentId}/result`)).body.result === "second",
        "the second turn settled",
        60_000,
      );
      // The settled turn's last events may still be on their way: compare once the route and the
      // fold stand at the same event.
      let later: Json;
      await until(
        async () => {
          later = (await d.call("GET", `/runs/${run.runId}/timeline`)).body;
          return later.asOf === state.lastSeq;
        },
        "the fold and the route at the same event",
        30_000,
      );
      assert.ok(state.timeline);
      assert.deepEqual(timelineAnswer(state.timeline), later);
      assert.equal(later.agents.find((a: Json) => a.agentId === kid).spans.at(-1).activity, "paused");
    } finally {
      await followed.stop();
      await d.call("DELETE", `/runs/${run.runId}`);
    }
  });
});

describe("the console's fold of what a harness writes", () => {
  it("takes hostile event data without throwing, and keeps only a short line of it", () => {
    const state = new RunState("r_1");
    const at = 1_700_000_000_000;
    state.apply({ id: "1", event: "run_started", data: JSON.stringify({ runId: "r_1", agentId: null, seq: 1, at }) });
    const hostile = [
      { event: "text", data: { agentId: "a_1", delta: { toString: null } } },
      { event: "text", data: { agentId: "a_1", delta: "x".repeat(100_000), at: 1e20 } },
      { event: "thinking", data: { agentId: { nested: true }, delta: 7 } },
      { event: "<img src=x onerror=alert(1)>", data: { agentId: "a_1" } },
      { event: "text", data: "[1,2,3]" },
      { event: "text", data: "not json" },
    ];
    for (const { event, data } of hostile)
      assert.doesNotThrow(() =>
        state.apply({ id: undefined, event, data: typeof data === "string" ? data : JSON.stringify(data) }, at + 5),
      );
    assert.doesNotThrow(() =>
      state.apply({
        id: "2",
        event: "tool_start",
        data: JSON.stringify({ agentId: "a_1", toolName: { toString: null }, seq: 2, at, hseq: 1, harnessAt: 0 }),
      }),
    );
    assert.equal(state.lastSeq, 2, "the persisted event was folded");
    assert.deepEqual(state.activity.get("a_1"), { kind: "tool", toolName: "a tool", since: at });
    const long = state.log.find((e) => e.summary.startsWith('{"delta":"xxx'));
    assert.ok(long && long.summary.length <= 301, "the log keeps a line, not 100,000 characters");
    assert.equal(long?.at, at + 5, "an ephemeral event's own `at` is not taken as its time");
    assert.equal(state.log.filter((e) => e.seq === null).length, 4, "what is not a JSON object is dropped");
  });
});

describe("the console's stream on a daemon with a token", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ token: "right-token" });
  });
  after(() => d.stop());

  it("ends with the API's message when the token is refused, and follows with the right one", async () => {
    const auth = { authorization: "Bearer right-token" };
    const run = (await d.call("POST", "/runs", { spec: { name: "guarded", script: [] }, prompt: "hi" }, auth)).body;
    const refused = follow(d.url, run.runId, "wrong-token");
    await refused.done;
    assert.deepEqual(refused.statuses.at(-1), {
      state: "refused",
      status: 401,
      error: "Missing or wrong bearer token.",
    });
    assert.equal(refused.state.received, 0);

    const missing = follow(d.url, "r_00ff", "right-token");
    await missing.done;
    assert.deepEqual(missing.statuses.at(-1), { state: "refused", status: 404, error: "Run r_00ff does not exist." });

    const followed = follow(d.url, run.runId, "right-token");
    try {
      await until(() => followed.state.agent(run.rootAgentId)?.state === "done", "the run folded to its end", 60_000);
      assert.equal(followed.statuses.at(-1)?.state, "live");
    } finally {
      await followed.stop();
    }
  });
});
