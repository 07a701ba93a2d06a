import assert from "node:assert/strict";
import { test } from "node:test";
import { setup } from "./fakes.ts";

const SPEC = { name: "echo", script: [] };

/** Each invalid request is a 400 whose message names every failing field, and the facade is never called. */
const CASES: Array<[method: "GET" | "POST" | "DELETE", url: string, payload: unknown, error: string]> = [
  ["POST", "/runs", undefined, "body: is required"],
  ["POST", "/runs", [], "body: expected object"],
  ["POST", "/runs", {}, "body.spec: is required"],
  [
    "POST",
    "/runs/r_1/agents",
    { parentAgentId: "a_1", spec: { name: "", script: [] }, waitFor: "a_2" },
    "body.spec.name: must be 1..64 characters of [A-Za-z0-9._-]; body.waitFor: expected array",
  ],
  ["POST", "/runs", { spec: { name: "x" } }, "body.spec.model: exactly one of model or script is required"],
  [
    "POST",
    "/runs",
    { spec: { name: "x", script: [{ txt: "hi" }] } },
    "body.spec.script[0].text: is required; body.spec.script[0].txt: unknown field",
  ],
  [
    "POST",
    "/runs",
    { spec: SPEC, budget: { spawnDepth: 1.5, maxAgents: -1 } },
    "body.budget.spawnDepth: expected integer; body.budget.maxAgents: Too small: expected number to be >=0",
  ],
  [
    "POST",
    "/runs",
    { spec: SPEC, prompt: 7, keepAlive: "yes" },
    "body.prompt: expected string; body.keepAlive: expected boolean",
  ],
  ["POST", "/runs/r_1/agents", { spec: SPEC }, "body.parentAgentId: is required"],
  [
    "POST",
    "/runs/r_1/agents",
    { parentAgentId: "a_1", spec: SPEC, waitFor: ["a_2", 3] },
    "body.waitFor[1]: expected string",
  ],
  ["POST", "/agents/a_1/prompt", {}, "body.text: is required"],
  ["POST", "/agents/a_1/prompt", { text: "" }, "body.text: must not be empty"],
  ["POST", "/agents/a_1/steer", { text: "hi" }, "body.message: is required; body.text: unknown field"],
  // Unknown fields, named one by one at any depth.
  ["POST", "/runs", { spec: SPEC, colour: "red", size: 1 }, "body.colour: unknown field; body.size: unknown field"],
  ["POST", "/runs", { spec: { ...SPEC, gpu: true } }, "body.spec.gpu: unknown field"],
  ["POST", "/runs", { spec: SPEC, budget: { tokens: 5 } }, "body.budget.tokens: unknown field"],
  ["POST", "/agents/a_1/pause", { scope: "agent", force: true }, "body.force: unknown field"],
  // Scope and mode values.
  ["POST", "/agents/a_1/pause", { scope: "tree" }, 'body.scope: must be "agent" or "subtree"'],
  ["POST", "/agents/a_1/resume", { scope: "" }, 'body.scope: must be "agent" or "subtree"'],
  ["POST", "/agents/a_1/stop", { scope: "all" }, 'body.scope: must be "agent" or "subtree"'],
  ["POST", "/agents/a_1/steer", { message: "m", scope: "run" }, 'body.scope: must be "agent" or "subtree"'],
  ["POST", "/agents/a_1/stop", { mode: "kill" }, 'body.mode: must be "abort" or "drain"'],
  ["POST", "/agents/a_1/stop", { drainTimeoutMs: 5000 }, 'body.drainTimeoutMs: is only for mode "drain"'],
  [
    "POST",
    "/agents/a_1/stop",
    { mode: "drain", drainTimeoutMs: 10 },
    "body.drainTimeoutMs: must be an integer number of milliseconds 1000..86400000",
  ],
  ["POST", "/agents/a_1/permissions/p_1", {}, 'body.decision: must be "allow" or "deny"'],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "maybe" }, 'body.decision: must be "allow" or "deny"'],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "deny", message: "" }, "body.message: must not be empty"],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "deny", why: "x" }, "body.why: unknown field"],
  ["POST", "/agents/a_1/pause", null, "body: expected object"],
  // The result wait: integer seconds 0..240.
  ["GET", "/agents/a_1/result?wait=241", undefined, "query.wait: must be an integer number of seconds 0..240"],
  ["GET", "/agents/a_1/result?wait=-1", undefined, "query.wait: must be an integer number of seconds 0..240"],
  ["GET", "/agents/a_1/result?wait=1.5", undefined, "query.wait: must be an integer number of seconds 0..240"],
  ["GET", "/agents/a_1/result?wait=soon", undefined, "query.wait: must be an integer number of seconds 0..240"],
  ["GET", "/agents/a_1/result?wait=", undefined, "query.wait: must be an integer number of seconds 0..240"],
  ["GET", "/agents/a_1/result?wait=1&wait=2", undefined, "query.wait: expected string"],
  // purge: "true" or "false", nothing else.
  ["DELETE", "/runs/r_1?purge=yes", undefined, 'query.purge: must be "true" or "false"'],
  ["DELETE", "/runs/r_1?purge=1", undefined, 'query.purge: must be "true" or "false"'],
  ["DELETE", "/runs/r_1?purge=", undefined, 'query.purge: must be "true" or "false"'],
  ["DELETE", "/runs/r_1?purge=TRUE", undefined, 'query.purge: must be "true" or "false"'],
  ["DELETE", "/runs/r_1?purge=true&purge=false", undefined, 'query.purge: must be "true" or "false"'],
];

for (const [method, url, payload, error] of CASES) {
  test(`${method} ${url} ${JSON.stringify(payload) ?? ""} is a 400 naming the field`, async (t) => {
    const { app, swarm } = setup();
    t.after(() => app.close());
    const body =
      payload === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(payload) };
    const res = await app.inject({ method, url, ...body });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error });
    assert.deepEqual(swarm.calls, []);
  });
}

test("wait=0 and wait=240 are accepted", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  for (const wait of [0, 240]) {
    const res = await app.inject({ method: "GET", url: `/agents/a_1/result?wait=${wait}` });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(swarm.last("result"), ["a_1", wait]);
  }
});
