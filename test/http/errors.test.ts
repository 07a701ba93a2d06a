import assert from "node:assert/strict";
import { test } from "node:test";
import { type ErrorCode, SwarmError } from "../../src/errors.ts";
import type { SwarmApi } from "../../src/swarm-api.ts";
import { setup } from "./fakes.ts";

const SPEC = { name: "echo", script: [] };
const SPAWN = { parentAgentId: "a_1", spec: SPEC };

/** Spec section 7, row by row: the facade throws the code, the route answers the status. */
const ROWS: Array<
  [
    method: "GET" | "POST" | "DELETE",
    url: string,
    payload: object | undefined,
    fails: keyof SwarmApi,
    code: ErrorCode,
    status: number,
  ]
> = [
  ["POST", "/runs/r_1/agents", { ...SPAWN, waitFor: ["a_9"] }, "spawn", "INVALID_BODY", 400],
  ["POST", "/runs/r_1/agents", SPAWN, "spawn", "AGENT_NOT_FOUND", 404],
  ["POST", "/runs/r_1/agents", SPAWN, "spawn", "RUN_NOT_FOUND", 404],
  ["POST", "/runs/r_1/agents", SPAWN, "spawn", "AGENT_NOT_LIVE", 409],
  ["GET", "/runs/r_1", undefined, "getRun", "RUN_NOT_FOUND", 404],
  ["DELETE", "/runs/r_1", undefined, "deleteRun", "RUN_NOT_FOUND", 404],
  ["GET", "/agents/a_1", undefined, "getAgent", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/prompt", { text: "hi" }, "prompt", "AGENT_NOT_LIVE", 409],
  ["POST", "/agents/a_1/prompt", { text: "hi" }, "prompt", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "AGENT_NOT_LIVE", 409],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "HARNESS_REJECTED", 502],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "HARNESS_UNREACHABLE", 502],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "HARNESS_TIMEOUT", 502],
  ["POST", "/agents/a_1/prompt", { text: "hi" }, "prompt", "AGENT_DRAINING", 409],
  ["POST", "/agents/a_1/steer", { message: "m" }, "steer", "AGENT_DRAINING", 409],
  ["POST", "/runs/r_1/agents", SPAWN, "spawn", "AGENT_DRAINING", 409],
  ["GET", "/runs/r_1/permissions", undefined, "listPermissions", "RUN_NOT_FOUND", 404],
  ["GET", "/nodes", undefined, "listNodes", "RUNTIME_UNAVAILABLE", 503],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "allow" }, "resolvePermission", "PERMISSION_NOT_FOUND", 404],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "deny" }, "resolvePermission", "PERMISSION_RESOLVED", 409],
  ["POST", "/agents/a_1/permissions/p_1", { decision: "allow" }, "resolvePermission", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/pause", {}, "pause", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/pause", {}, "pause", "AGENT_NOT_LIVE", 409],
  ["POST", "/agents/a_1/pause", {}, "pause", "SANDBOX_FREEZE_FAILED", 502],
  ["POST", "/agents/a_1/resume", {}, "resume", "AGENT_NOT_FOUND", 404],
  ["POST", "/agents/a_1/resume", {}, "resume", "AGENT_NOT_PAUSED", 409],
  ["POST", "/agents/a_1/resume", {}, "resume", "AGENT_NOT_LIVE", 409],
  ["POST", "/agents/a_1/resume", {}, "resume", "SANDBOX_THAW_FAILED", 502],
  ["POST", "/agents/a_1/stop", {}, "stop", "AGENT_NOT_FOUND", 404],
  ["GET", "/agents/a_1/result", undefined, "result", "AGENT_NOT_FOUND", 404],
  ["POST", "/runs", { spec: SPEC }, "createRun", "RUNTIME_UNAVAILABLE", 503],
  ["POST", "/runs", { spec: SPEC }, "createRun", "SANDBOX_PROVISION_FAILED", 500],
];

for (const [method, url, payload, fails, code, status] of ROWS) {
  test(`${method} ${url}: ${code} is ${status} {"error": message}`, async (t) => {
    const { app, swarm } = setup();
    t.after(() => app.close());
    swarm.fail(fails, new SwarmError(code, `because ${code}`));
    const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
    assert.equal(res.statusCode, status);
    assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
    assert.deepEqual(res.json(), { error: `because ${code}` });
  });
}

test("an unexpected fault is a 500 that does not leak its message", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  swarm.fail("getAgent", new TypeError("cannot read /secret/path"));
  const res = await app.inject({ method: "GET", url: "/agents/a_1" });
  assert.equal(res.statusCode, 500);
  assert.deepEqual(res.json(), { error: "Internal error." });
});

test("malformed ids are the 404 of their kind, without calling the facade", async (t) => {
  const { app, swarm } = setup();
  t.after(() => app.close());
  for (const [url, error] of [
    ["/runs/run-1", "Run run-1 does not exist."],
    ["/runs/a_1/events", "Run a_1 does not exist."],
    ["/agents/r_1", "Agent r_1 does not exist."],
    ["/agents/a_XYZ/result", "Agent a_XYZ does not exist."],
  ] as const) {
    const res = await app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 404, url);
    assert.deepEqual(res.json(), { error });
  }
  assert.deepEqual(swarm.calls, []);
});

test("the stream of a run that does not exist is a 404", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/runs/r_2/events" });
  assert.equal(res.statusCode, 404);
  assert.deepEqual(res.json(), { error: "Run r_2 does not exist." });
});

test("unknown routes and methods are 404 {error}", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const missing = await app.inject({ method: "GET", url: "/nope?x=1" });
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(missing.json(), { error: "No route GET /nope." });
  const wrongMethod = await app.inject({ method: "PUT", url: "/runs/r_1" });
  assert.equal(wrongMethod.statusCode, 404);
  assert.deepEqual(wrongMethod.json(), { error: "No route PUT /runs/r_1." });
});

test("the 413 names the limit, in MiB when whole, and SWARM_BODY_LIMIT", async (t) => {
  const { app, swarm } = setup({ bodyLimitBytes: 1024 * 1024 });
  t.after(() => app.close());
  const res = await app.inject({
    method: "POST",
    url: "/runs",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ spec: SPEC, prompt: "x".repeat(1024 * 1024) }),
  });
  assert.equal(res.statusCode, 413);
  assert.deepEqual(res.json(), {
    error: "The request body is over the limit of 1048576 bytes (1 MiB); the daemon's SWARM_BODY_LIMIT sets it.",
  });
  assert.deepEqual(swarm.calls, []);
});

test("fastify's own request errors are mapped: bad JSON 400, wrong type 415, too large 413, bad URL 400", async (t) => {
  const { app, swarm } = setup({ bodyLimitBytes: 1024 });
  t.after(() => app.close());
  const json = { "content-type": "application/json" };
  const cases = [
    [{ method: "POST", url: "/runs", headers: json, body: "{nope" }, 400, "body: is not valid JSON"],
    [
      { method: "POST", url: "/runs", headers: { "content-type": "text/plain" }, body: "hi" },
      415,
      "Unsupported Media Type: request bodies must be application/json.",
    ],
    [
      {
        method: "POST",
        url: "/agents/a_1/pause",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "scope=subtree",
      },
      415,
      "Unsupported Media Type: request bodies must be application/json.",
    ],
    [
      { method: "POST", url: "/runs", headers: json, body: JSON.stringify({ spec: SPEC, prompt: "x".repeat(2000) }) },
      413,
      "The request body is over the limit of 1024 bytes; the daemon's SWARM_BODY_LIMIT sets it.",
    ],
    [{ method: "GET", url: "/runs/%zz" }, 400, "'/runs/%zz' is not a valid url component"],
  ] as const;
  for (const [request, status, error] of cases) {
    const res = await app.inject(request);
    assert.equal(res.statusCode, status, `${request.method} ${request.url}`);
    assert.deepEqual(res.json(), { error });
  }
  assert.deepEqual(swarm.calls, []);
});
