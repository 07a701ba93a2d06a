import assert from "node:assert/strict";
import { test } from "node:test";
import { AGENT, NO_CAPS, PENDING, PERMISSION, ROOT_ID, RUN_ID, RUN_SUMMARY, SETTLED, setup } from "./fakes.ts";

const SPEC = { name: "echo", script: [] };
const JSON_TYPE = "application/json; charset=utf-8";

test("GET /health answers 200 {ok:true}", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/health" });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers["content-type"], JSON_TYPE);
  assert.deepEqual(res.json(), { ok: true });
});

test("POST /runs answers 202 with the run and passes the parsed request on", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const payload = { spec: SPEC, prompt: "hello", budget: { spawnDepth: 1, maxAgents: 3 }, keepAlive: true };
  const res = await app.inject({ method: "POST", url: "/runs", payload });
  assert.equal(res.statusCode, 202);
  assert.equal(res.headers["content-type"], JSON_TYPE);
  assert.deepEqual(res.json(), { runId: RUN_ID, rootAgentId: ROOT_ID, state: "provisioning" });
  assert.deepEqual(swarm.last("createRun"), [payload]);
});

test("GET /runs answers 200 {runs}; limit is passed on, and a bad one is a 400", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/runs" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { runs: [RUN_SUMMARY] });
  assert.deepEqual(swarm.last("listRuns"), [undefined]);
  await app.inject({ method: "GET", url: "/runs?limit=5" });
  assert.deepEqual(swarm.last("listRuns"), [5]);
  for (const limit of ["0", "1001", "x", "-1"]) {
    const bad = await app.inject({ method: "GET", url: `/runs?limit=${limit}` });
    assert.equal(bad.statusCode, 400, limit);
    assert.match(bad.json().error, /query\.limit: must be an integer 1\.\.1000/);
  }
});

test("GET /agents/:agentId/machine answers 200 with the machine's view", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/agents/a_1/machine" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json().tags, ["live", "running"]);
  assert.deepEqual(swarm.last("getMachine"), [ROOT_ID]);
});

test("GET /runs/:runId answers 200 with the snapshot", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/runs/r_1" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { runId: RUN_ID, rootAgentId: ROOT_ID, asOf: 7, agents: [AGENT], usage: AGENT.usage });
  assert.deepEqual(swarm.last("getRun"), [RUN_ID]);
});

test("DELETE /runs/:runId answers 204 with no body", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "DELETE", url: "/runs/r_1" });
  assert.equal(res.statusCode, 204);
  assert.equal(res.body, "");
  assert.equal(res.headers["content-type"], undefined);
  assert.deepEqual(swarm.last("deleteRun"), [RUN_ID, { purge: false }]);
});

test("DELETE /runs/:runId?purge=true answers as a delete does and asks for the purge; purge=false is a plain delete", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const kept = await app.inject({ method: "DELETE", url: "/runs/r_1?purge=false" });
  assert.equal(kept.statusCode, 204);
  assert.deepEqual(swarm.last("deleteRun"), [RUN_ID, { purge: false }]);
  const purged = await app.inject({ method: "DELETE", url: "/runs/r_1?purge=true" });
  assert.equal(purged.statusCode, 204);
  assert.equal(purged.body, "");
  assert.equal(purged.headers["content-type"], undefined);
  assert.deepEqual(swarm.last("deleteRun"), [RUN_ID, { purge: true }]);
});

test("POST /runs/:runId/agents answers 202 with the child and its state", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const minimal = await app.inject({
    method: "POST",
    url: "/runs/r_1/agents",
    payload: { parentAgentId: ROOT_ID, spec: SPEC },
  });
  assert.equal(minimal.statusCode, 202);
  assert.deepEqual(minimal.json(), { agentId: "a_2", state: "provisioning" });
  assert.deepEqual(swarm.last("spawn"), [RUN_ID, { parentAgentId: ROOT_ID, spec: SPEC }]);

  const full = {
    parentAgentId: ROOT_ID,
    spec: { name: "w", model: { provider: "anthropic", id: "m" }, spawnDepth: 1 },
    prompt: "go",
    waitFor: ["a_3"],
    budget: { maxAgents: 2 },
    idempotencyKey: "k1",
    keepAlive: false,
  };
  const res = await app.inject({ method: "POST", url: "/runs/r_1/agents", payload: full });
  assert.equal(res.statusCode, 202);
  assert.deepEqual(res.json(), { agentId: "a_2", state: "spawning" });
  assert.deepEqual(swarm.last("spawn"), [RUN_ID, full]);
});

test("GET /agents/:agentId answers 200 with the view and sessionStats", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/agents/a_1" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { ...AGENT, prompt: null, waitFor: [], budget: NO_CAPS, sessionStats: { tokens: 12 } });
});

test("POST /agents/:agentId/budget answers 200 with the new caps; a body naming neither cap, or anything else, is a 400", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({
    method: "POST",
    url: "/agents/a_1/budget",
    payload: { maxTokens: 5000, maxCostUsd: 1.5 },
  });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { agentId: "a_1", budget: { ...NO_CAPS, maxTokens: 5000, maxCostUsd: 1.5 } });
  assert.deepEqual(swarm.last("setBudget"), ["a_1", { maxTokens: 5000, maxCostUsd: 1.5 }]);
  assert.equal(
    (await app.inject({ method: "POST", url: "/agents/a_1/budget", payload: { maxTokens: null } })).statusCode,
    200,
    "null lifts a cap",
  );
  for (const [payload, field] of [
    [{}, /maxTokens, maxCostUsd or both/],
    [{ maxTokens: -1 }, /body\.maxTokens/],
    [{ maxTokens: 1.5 }, /body\.maxTokens/],
    [{ maxCostUsd: "1" }, /body\.maxCostUsd/],
    [{ maxTokens: 1, spawnDepth: 2 }, /spawnDepth/],
  ] as const) {
    const bad = await app.inject({ method: "POST", url: "/agents/a_1/budget", payload });
    assert.equal(bad.statusCode, 400, JSON.stringify(payload));
    assert.match(bad.json().error, field);
  }
});

test("POST /agents/:agentId/prompt answers 202 {accepted:true}", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "POST", url: "/agents/a_1/prompt", payload: { text: "again" } });
  assert.equal(res.statusCode, 202);
  assert.deepEqual(res.json(), { accepted: true });
  assert.deepEqual(swarm.last("prompt"), [ROOT_ID, "again"]);
});

test("POST /agents/:agentId/steer answers 202 with results and delivery; scope defaults to agent", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "POST", url: "/agents/a_1/steer", payload: { message: "focus" } });
  assert.equal(res.statusCode, 202);
  assert.deepEqual(res.json(), { results: [{ agentId: ROOT_ID, outcome: "applied" }], delivery: "steer" });
  assert.deepEqual(swarm.last("steer"), [ROOT_ID, { message: "focus", scope: "agent" }]);
  await app.inject({ method: "POST", url: "/agents/a_1/steer", payload: { message: "replan", scope: "subtree" } });
  assert.deepEqual(swarm.last("steer"), [ROOT_ID, { message: "replan", scope: "subtree" }]);
});

test("pause and resume answer 202 with results; the body is optional and scope defaults to agent", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  for (const action of ["pause", "resume"] as const) {
    const url = `/agents/a_1/${action}`;
    const bare = await app.inject({ method: "POST", url });
    assert.equal(bare.statusCode, 202);
    assert.deepEqual(bare.json(), { results: [{ agentId: ROOT_ID, outcome: "applied" }] });
    assert.deepEqual(swarm.last(action), [ROOT_ID, "agent"]);
    // Some clients always send the JSON content type, even with nothing after it.
    const empty = await app.inject({ method: "POST", url, headers: { "content-type": "application/json" }, body: "" });
    assert.equal(empty.statusCode, 202);
    const subtree = await app.inject({ method: "POST", url, payload: { scope: "subtree" } });
    assert.equal(subtree.statusCode, 202);
    assert.deepEqual(swarm.last(action), [ROOT_ID, "subtree"]);
  }
});

test("stop answers 202; mode defaults to abort and scope to agent", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const bare = await app.inject({ method: "POST", url: "/agents/a_1/stop" });
  assert.equal(bare.statusCode, 202);
  assert.deepEqual(bare.json(), { results: [{ agentId: ROOT_ID, outcome: "applied" }] });
  assert.deepEqual(swarm.last("stop"), [ROOT_ID, { mode: "abort", scope: "agent" }]);
  await app.inject({ method: "POST", url: "/agents/a_1/stop", payload: { mode: "drain", scope: "subtree" } });
  assert.deepEqual(swarm.last("stop"), [ROOT_ID, { mode: "drain", scope: "subtree" }]);
});

test("stop with mode drain passes drainTimeoutMs on", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({
    method: "POST",
    url: "/agents/a_1/stop",
    payload: { mode: "drain", drainTimeoutMs: 5_000 },
  });
  assert.equal(res.statusCode, 202);
  assert.deepEqual(swarm.last("stop"), [ROOT_ID, { mode: "drain", scope: "agent", drainTimeoutMs: 5_000 }]);
});

test("GET /runs/:runId/permissions answers 200 {permissions}; state defaults to pending; a bad state is a 400", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/runs/r_1/permissions" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { permissions: [PERMISSION] });
  assert.deepEqual(swarm.last("listPermissions"), [RUN_ID, "pending"]);
  await app.inject({ method: "GET", url: "/runs/r_1/permissions?state=all" });
  assert.deepEqual(swarm.last("listPermissions"), [RUN_ID, "all"]);
  const bad = await app.inject({ method: "GET", url: "/runs/r_1/permissions?state=open" });
  assert.equal(bad.statusCode, 400);
  assert.match(bad.json().error, /query\.state: must be "pending", "resolved" or "all"/);
});

test("POST /agents/:agentId/permissions/:requestId answers 202 with the resolved request; a malformed id is a 404 without a call", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const res = await app.inject({
    method: "POST",
    url: `/agents/a_1/permissions/${PERMISSION.requestId}`,
    payload: { decision: "deny", message: "not on main" },
  });
  assert.equal(res.statusCode, 202);
  assert.equal(res.json().state, "resolved");
  assert.equal(res.json().decision, "deny");
  assert.deepEqual(swarm.last("resolvePermission"), [
    ROOT_ID,
    PERMISSION.requestId,
    { decision: "deny", message: "not on main" },
  ]);
  const before = swarm.calls.length;
  const bad = await app.inject({
    method: "POST",
    url: "/agents/a_1/permissions/req-1",
    payload: { decision: "allow" },
  });
  assert.equal(bad.statusCode, 404);
  assert.equal(swarm.calls.length, before);
});

test("GET /agents/:agentId/result answers 200 when settled and 202 when pending, passing wait in seconds", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  const settled = await app.inject({ method: "GET", url: "/agents/a_1/result" });
  assert.equal(settled.statusCode, 200);
  assert.deepEqual(settled.json(), SETTLED);
  assert.deepEqual(swarm.last("result"), [ROOT_ID, 0]);

  swarm.setResult(PENDING);
  const pending = await app.inject({ method: "GET", url: "/agents/a_1/result?wait=0" });
  assert.equal(pending.statusCode, 202);
  assert.deepEqual(pending.json(), PENDING);

  swarm.setResult(SETTLED);
  const waited = await app.inject({ method: "GET", url: "/agents/a_1/result?wait=240" });
  assert.equal(waited.statusCode, 200);
  assert.deepEqual(swarm.last("result"), [ROOT_ID, 240]);
});

test("the result wait ends early when the client disconnects", { timeout: 10_000 }, async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  swarm.setResult(PENDING);
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const controller = new AbortController();
  const request = fetch(`${address}/agents/a_1/result?wait=240`, { signal: controller.signal }).catch(
    (err: unknown) => err,
  );
  while (swarm.waits.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  assert.equal(await swarm.waits[0], "aborted");
  assert.ok((await request) instanceof Error);
});
