import assert from "node:assert/strict";
import { test } from "node:test";
import { RUN_ID, setup } from "./fakes.ts";

const TOKEN = "s3cret-token";

test("with a token, every route but /health needs the bearer token", async (t) => {
  const { app, swarm } = setup({ token: TOKEN });
  t.after(() => app.close());
  const refused = [
    {},
    { authorization: "Bearer wrong" },
    { authorization: `Bearer ${TOKEN}x` },
    { authorization: `Basic ${TOKEN}` },
    { authorization: TOKEN },
    { authorization: "Bearer " },
  ];
  for (const headers of refused) {
    for (const [method, url] of [
      ["GET", "/runs/r_1"],
      ["POST", "/agents/a_1/pause"],
      ["GET", "/runs/r_1/events"],
      ["GET", "/nope"],
    ] as const) {
      const res = await app.inject({ method, url, headers });
      assert.equal(res.statusCode, 401, `${method} ${url} ${JSON.stringify(headers)}`);
      assert.equal(res.headers["www-authenticate"], "Bearer");
      assert.deepEqual(res.json(), { error: "Missing or wrong bearer token." });
    }
  }
  assert.deepEqual(swarm.calls, [], "nothing reached the facade");

  const health = await app.inject({ method: "GET", url: "/health" });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { ok: true });

  for (const authorization of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`]) {
    const ok = await app.inject({ method: "GET", url: "/runs/r_1", headers: { authorization } });
    assert.equal(ok.statusCode, 200, authorization);
    assert.equal(ok.json().runId, RUN_ID);
  }
});

test("auth runs before body checks, so a stranger learns nothing about the API", async (t) => {
  const { app } = setup({ token: TOKEN });
  t.after(() => app.close());
  const res = await app.inject({ method: "POST", url: "/runs", payload: { bogus: true } });
  assert.equal(res.statusCode, 401);
  const authed = await app.inject({
    method: "POST",
    url: "/runs",
    payload: { bogus: true },
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(authed.statusCode, 400);
});

test("without a token every route is open", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const res = await app.inject({ method: "GET", url: "/runs/r_1" });
  assert.equal(res.statusCode, 200);
  const withHeader = await app.inject({
    method: "GET",
    url: "/runs/r_1",
    headers: { authorization: "Bearer anything" },
  });
  assert.equal(withHeader.statusCode, 200);
});
