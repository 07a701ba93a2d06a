import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { openEvents, type SseMessage } from "../support/sse-client.ts";

const kept = (name: string) => ({ name, script: [] });

describe(`controls over HTTP: subtree cascades, steer, errors (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  /** root → (a → a1), b: all live and idle. */
  async function tree() {
    const created = (await d.call("POST", "/runs", { spec: kept("root"), keepAlive: true })).body as {
      runId: string;
      rootAgentId: string;
    };
    const spawn = async (parent: string, name: string) => {
      const r = await d.call("POST", `/runs/${created.runId}/agents`, {
        parentAgentId: parent,
        spec: kept(name),
        keepAlive: true,
      });
      return r.body.agentId as string;
    };
    await waitForState(d, created.rootAgentId, "running");
    const a = await spawn(created.rootAgentId, "a");
    await waitForState(d, a, "running");
    const a1 = await spawn(a, "a1");
    const b = await spawn(created.rootAgentId, "b");
    for (const id of [a1, b]) await waitForState(d, id, "running");
    return { runId: created.runId, root: created.rootAgentId, a, a1, b };
  }

  async function ledger(runId: string, untilSeq: number): Promise<SseMessage[]> {
    const events = await openEvents(d.url, runId);
    await events.waitFor((m) => m.id === untilSeq);
    events.close();
    return events.messages;
  }

  it("subtree pause goes parents first, resume children first and the named agent last, one depth at a time; pausedBy operator/cascade", async () => {
    const t = await tree();
    const paused = await d.call("POST", `/agents/${t.root}/pause`, { scope: "subtree" });
    assert.equal(paused.status, 202);
    assert.deepEqual(
      paused.body.results,
      [t.root, t.a, t.b, t.a1].map((agentId) => ({ agentId, outcome: "applied" })),
    );
    const snapshot = (await d.call("GET", `/runs/${t.runId}`)).body;
    const byId = new Map(snapshot.agents.map((a: { agentId: string }) => [a.agentId, a]));
    assert.equal((byId.get(t.root) as { pausedBy: string }).pausedBy, "operator");
    for (const id of [t.a, t.a1, t.b]) assert.equal((byId.get(id) as { pausedBy: string }).pausedBy, "cascade");

    const resumed = await d.call("POST", `/agents/${t.root}/resume`, { scope: "subtree" });
    assert.deepEqual(
      resumed.body.results.map((r: { agentId: string }) => r.agentId),
      [t.a1, t.a, t.b, t.root],
    );
    const after = (await d.call("GET", `/runs/${t.runId}`)).body;
    const events = await ledger(t.runId, after.asOf);
    const order = (to: string) =>
      events
        .filter((m) => m.event === "agent_state_changed" && m.data.to === to)
        .map((m) => [m.data.agentId, m.data.reason]);
    // The members of one depth (a and b) get the control together: their events come in any order.
    const pausedOrder = order("paused");
    assert.deepEqual(pausedOrder[0], [t.root, "operator"]);
    assert.deepEqual(
      pausedOrder.slice(1, 3).sort(),
      [
        [t.a, "cascade"],
        [t.b, "cascade"],
      ].sort(),
    );
    assert.deepEqual(pausedOrder.slice(3), [[t.a1, "cascade"]]);
    const running = order("running")
      .slice(-4)
      .map(([id]) => id);
    assert.deepEqual([running[0], running.slice(1, 3).sort(), running[3]], [t.a1, [t.a, t.b].sort(), t.root]);
  });

  it("a child not yet forked when a subtree pause is issued joins the pause as soon as it is forked", async () => {
    const created = (await d.call("POST", "/runs", { spec: kept("root"), keepAlive: true })).body;
    await waitForState(d, created.rootAgentId, "running");
    const spawn = async (parent: string, name: string, extra: Record<string, unknown> = {}) =>
      (
        await d.call("POST", `/runs/${created.runId}/agents`, {
          parentAgentId: parent,
          spec: kept(name),
          keepAlive: true,
          ...extra,
        })
      ).body.agentId as string;
    const parent = await spawn(created.rootAgentId, "parent");
    const dep = await spawn(created.rootAgentId, "dep");
    await waitForState(d, parent, "running");
    const waiting = await spawn(parent, "waiting", { waitFor: [dep] });
    const paused = await d.call("POST", `/agents/${parent}/pause`, { scope: "subtree" });
    assert.deepEqual(paused.body.results, [
      { agentId: parent, outcome: "applied" },
      { agentId: waiting, outcome: "applied" },
    ]);
    assert.equal((await d.call("GET", `/agents/${waiting}`)).body.state, "spawning");
    await waitForState(d, dep, "running");
    await d.call("POST", `/agents/${dep}/prompt`, { text: "done" });
    await waitForState(d, waiting, "paused");
    const view = (await d.call("GET", `/agents/${waiting}`)).body;
    assert.equal(view.pausedBy, "cascade");
    assert.equal((await d.runtime.inspect(view.sandboxId, AbortSignal.timeout(5_000)))?.status, "frozen");
  });

  it("subtree stop goes leaves first and ends every member aborted", async () => {
    const t = await tree();
    const stopped = await d.call("POST", `/agents/${t.a}/stop`, { scope: "subtree" });
    assert.deepEqual(stopped.body.results, [
      { agentId: t.a1, outcome: "applied" },
      { agentId: t.a, outcome: "applied" },
    ]);
    const snapshot = (await d.call("GET", `/runs/${t.runId}`)).body;
    const events = await ledger(t.runId, snapshot.asOf);
    assert.deepEqual(
      events.filter((m) => m.event === "agent_ended").map((m) => m.data.agentId),
      [t.a1, t.a],
    );
    assert.equal((await d.call("GET", `/agents/${t.b}`)).body.state, "running", "siblings are untouched");
  });

  it("answers a subtree stop whose parent finishes on its own once its last child is stopped", {
    timeout: 120_000,
  }, async () => {
    // The root is not kept alive: after its turn it waits only for its one child.
    const created = (
      await d.call("POST", "/runs", {
        spec: { name: "planner", script: [{ tool: "bash", args: { command: "sleep 2" } }, { text: "planned" }] },
        prompt: "plan",
      })
    ).body as { runId: string; rootAgentId: string };
    const root = created.rootAgentId;
    await waitForState(d, root, "running");
    const child = (
      await d.call("POST", `/runs/${created.runId}/agents`, {
        parentAgentId: root,
        spec: kept("helper"),
        keepAlive: true,
      })
    ).body.agentId as string;
    await waitForState(d, child, "running");
    assert.equal((await d.call("GET", `/agents/${root}/result?wait=30`)).status, 200);
    assert.equal((await d.call("GET", `/agents/${root}`)).body.state, "running", "the root waits for its child");

    const stopped = await d.call("POST", `/agents/${root}/stop`, { scope: "subtree" });
    assert.equal(stopped.status, 202);
    assert.deepEqual(stopped.body.results, [
      { agentId: child, outcome: "applied" },
      { agentId: root, outcome: "noop" },
    ]);
    await waitForState(d, root, "done");
    assert.equal(
      (await d.call("GET", `/agents/${root}`)).body.outcome,
      "success",
      "the root keeps the outcome it finished with",
    );
    assert.equal((await d.call("GET", `/agents/${child}`)).body.outcome, "aborted");
    assert.equal(
      (await d.call("POST", `/agents/${child}/stop`, {})).status,
      202,
      "later controls on the run are answered",
    );
  });

  it("steer reaches the running turn after its tool; an idle agent gets a new turn; a paused one gets it on resume", async () => {
    const created = (
      await d.call("POST", "/runs", {
        spec: {
          name: "worker",
          script: [{ tool: "bash", args: { command: "sleep 1; echo tool-done" } }, { text: "saw {{lastUserMessage}}" }],
        },
        prompt: "work",
        keepAlive: true,
      })
    ).body;
    const events = await openEvents(d.url, created.runId);
    await events.waitFor((m) => m.event === "tool_start");
    const steered = await d.call("POST", `/agents/${created.rootAgentId}/steer`, { message: "new direction" });
    assert.equal(steered.status, 202);
    assert.deepEqual(steered.body, {
      results: [{ agentId: created.rootAgentId, outcome: "applied" }],
      delivery: "steer",
    });
    const result = await d.call("GET", `/agents/${created.rootAgentId}/result?wait=60`);
    assert.equal(result.body.result, "saw new direction");
    await events.waitFor((m) => m.event === "agent_steered");
    events.close();
    const steerEvent = events.messages.find((m) => m.event === "agent_steered")!;
    assert.equal(steerEvent.data.message, "new direction");

    const idle = await d.call("POST", `/agents/${created.rootAgentId}/steer`, { message: "echo this" });
    assert.equal(idle.body.delivery, "turn");
    await waitForResult(d, created.rootAgentId, "echo this");

    await d.call("POST", `/agents/${created.rootAgentId}/pause`);
    const queued = await d.call("POST", `/agents/${created.rootAgentId}/steer`, { message: "after resume" });
    assert.equal(queued.body.delivery, "queued");
    await d.call("POST", `/agents/${created.rootAgentId}/resume`);
    await waitForResult(d, created.rootAgentId, "after resume");
  });

  it("subtree steer sends the parent one message with the operator's text, a table of its children and an instruction to re-plan", async () => {
    const t = await tree();
    const steered = await d.call("POST", `/agents/${t.root}/steer`, { message: "focus on tests", scope: "subtree" });
    assert.equal(steered.status, 202);
    assert.equal(steered.body.delivery, "turn");
    assert.deepEqual(steered.body.results, [{ agentId: t.root, outcome: "applied" }]);
    const result = await d.call("GET", `/agents/${t.root}/result?wait=60`);
    const text: string = result.body.result;
    assert.match(text, /focus on tests/);
    assert.match(text, new RegExp(`\\| ${t.a} \\| a \\| running \\|`));
    assert.match(text, new RegExp(`\\| ${t.b} \\| b \\| running \\|`));
    assert.ok(!text.includes(t.a1), "the table lists the parent's own children");
    assert.match(text, /Re-plan/);
    const children = await Promise.all([t.a, t.a1, t.b].map((id) => d.call("GET", `/agents/${id}/result`)));
    assert.ok(
      children.every((c) => c.status === 202),
      "the children received nothing",
    );
  });

  it("answers every error row of spec section 7", async () => {
    const t = await tree();
    const other = (await d.call("POST", "/runs", { spec: kept("other"), keepAlive: true })).body;
    const missing = "a_ffffffffffffffff";
    const cases: Array<[string, string, unknown, number]> = [
      ["POST", `/runs/${t.runId}/agents`, { parentAgentId: t.root }, 400],
      [
        "POST",
        `/runs/${t.runId}/agents`,
        { parentAgentId: t.root, spec: kept("x"), waitFor: [other.rootAgentId] },
        400,
      ],
      ["POST", `/runs/${t.runId}/agents`, { parentAgentId: other.rootAgentId, spec: kept("x") }, 404],
      ["GET", "/runs/r_ffffffffffffffff", undefined, 404],
      ["DELETE", "/runs/r_ffffffffffffffff", undefined, 404],
      ["GET", `/agents/${missing}`, undefined, 404],
      ["POST", `/agents/${missing}/steer`, { message: "x" }, 404],
      ["POST", `/agents/${missing}/pause`, {}, 404],
      ["POST", `/agents/${missing}/resume`, {}, 404],
      ["POST", `/agents/${missing}/stop`, {}, 404],
      ["GET", `/agents/${missing}/result`, undefined, 404],
      ["POST", `/agents/${t.b}/resume`, {}, 409],
    ];
    for (const [method, path, body, status] of cases) {
      const reply = await d.call(method, path, body);
      assert.equal(reply.status, status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`);
      assert.deepEqual(Object.keys(reply.body), ["error"]);
    }
    const invalid = await d.call("POST", `/runs/${t.runId}/agents`, {
      parentAgentId: t.root,
      spec: { name: "bad name!", script: [] },
      colour: 1,
    });
    assert.match(invalid.body.error, /spec\.name/);
    assert.match(invalid.body.error, /colour/);

    await d.call("POST", `/agents/${t.b}/stop`);
    for (const [path, body] of [
      [`/agents/${t.b}/prompt`, { text: "x" }],
      [`/agents/${t.b}/steer`, { message: "x" }],
      [`/agents/${t.b}/pause`, {}],
      [`/agents/${t.b}/resume`, {}],
    ] as const) {
      assert.equal((await d.call("POST", path, body)).status, 409, path);
    }
    assert.equal(
      (await d.call("POST", `/runs/${t.runId}/agents`, { parentAgentId: t.b, spec: kept("x") })).status,
      409,
      "parent not live",
    );
  });

  it("replays from any Last-Event-ID and from a snapshot's asOf: snapshot + events after asOf equal the live state", async () => {
    const t = await tree();
    const snapshot = (await d.call("GET", `/runs/${t.runId}`)).body;
    const full = await ledger(t.runId, snapshot.asOf);
    for (const from of [0, 1, Math.floor(snapshot.asOf / 2), snapshot.asOf - 1]) {
      const replay = await openEvents(d.url, t.runId, { lastEventId: from });
      await replay.waitFor((m) => m.id === snapshot.asOf);
      replay.close();
      assert.deepEqual(
        replay.messages.filter((m) => m.id !== undefined).map((m) => m.id),
        full.map((m) => m.id).filter((id) => id! > from),
      );
    }
    const live = await openEvents(d.url, t.runId, { lastEventId: snapshot.asOf });
    await d.call("POST", `/agents/${t.a}/pause`);
    const pausedEvent = await live.waitFor((m) => m.event === "agent_state_changed");
    live.close();
    assert.equal(pausedEvent.id, snapshot.asOf + 1, "nothing between the snapshot and the first live event");
    const now = (await d.call("GET", `/runs/${t.runId}`)).body;
    const a = snapshot.agents.find((x: { agentId: string }) => x.agentId === t.a);
    assert.deepEqual(
      now.agents.find((x: { agentId: string }) => x.agentId === t.a),
      { ...a, state: "paused", pausedBy: "operator" },
    );
  });
});

async function waitForResult(d: Daemon, agentId: string, text: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const r = await d.call("GET", `/agents/${agentId}/result`);
    if (r.body.result === text) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`result of ${agentId} never became ${text}`);
}
