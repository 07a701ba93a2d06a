/**
 * `/docs`: swagger-ui from the daemon's own files, pointed at `/openapi.json`. The page and its
 * files need no token (a browser cannot send one on a page load); the document still does.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setup } from "./fakes.ts";

const TOKEN = "s3cret-token";
const ABSOLUTE_URL = /\bhttps?:\/\//i;

test("GET /docs answers an HTML page that loads only files of the daemon, each served", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const page = await app.inject({ method: "GET", url: "/docs" });
  assert.equal(page.statusCode, 200);
  assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
  assert.doesNotMatch(page.body, ABSOLUTE_URL, "no http(s) URL in the page");
  const policy = String(page.headers["content-security-policy"]);
  assert.match(policy, /default-src 'self'/);
  assert.match(policy, /connect-src 'self'/);
  assert.match(policy, /script-src 'self';/, "no inline or remote script");

  const references = [...page.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? "");
  const expected = {
    "docs/swagger-ui-bundle.js": "text/javascript",
    "docs/swagger-ui.css": "text/css",
    "docs/docs.js": "text/javascript",
    "docs/docs.css": "text/css",
    "docs/favicon-32x32.png": "image/png",
    "docs/favicon-16x16.png": "image/png",
  };
  assert.deepEqual(references.sort(), Object.keys(expected).sort());
  for (const reference of references) {
    const url = new URL(reference, "http://127.0.0.1/docs").pathname;
    const res = await app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 200, url);
    assert.ok(
      String(res.headers["content-type"]).startsWith(expected[reference as keyof typeof expected]),
      `${url}: ${res.headers["content-type"]}`,
    );
    assert.ok(res.rawPayload.length > 0, url);
    assert.equal(res.headers["x-content-type-options"], "nosniff");
  }
});

test("the page's own script and style sheet name no other host, load /openapi.json and keep swagger-ui's online validator off", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const script = (await app.inject({ method: "GET", url: "/docs/docs.js" })).body;
  const style = (await app.inject({ method: "GET", url: "/docs/docs.css" })).body;
  assert.doesNotMatch(script, ABSOLUTE_URL);
  assert.doesNotMatch(style, ABSOLUTE_URL);
  // Relative to the page at /docs: /openapi.json, on the daemon.
  assert.equal(new URL(/fetch\("([^"]+)"/.exec(script)?.[1] ?? "", "http://127.0.0.1/docs").pathname, "/openapi.json");
  assert.match(script, /validatorUrl: null/);
});

test("with a token, the page and its files load without it, and the document still wants it", async (t) => {
  const { app } = setup({ token: TOKEN });
  t.after(() => app.close());
  for (const url of [
    "/docs",
    "/docs/swagger-ui-bundle.js",
    "/docs/swagger-ui.css",
    "/docs/docs.js",
    "/docs/docs.css",
    "/docs/favicon-32x32.png",
    "/docs/favicon-16x16.png",
  ]) {
    assert.equal((await app.inject({ method: "GET", url })).statusCode, 200, url);
  }
  const refused = await app.inject({ method: "GET", url: "/openapi.json" });
  assert.equal(refused.statusCode, 401);
  assert.equal(refused.headers["www-authenticate"], "Bearer");
  assert.deepEqual(refused.json(), { error: "Missing or wrong bearer token." });
  const allowed = await app.inject({
    method: "GET",
    url: "/openapi.json",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(allowed.statusCode, 200);
  assert.equal(allowed.json().openapi, "3.1.0");
});

test("only the page's files are served: other names, folders and escapes are 404s, with or without a token", async (t) => {
  const { app } = setup({ token: TOKEN });
  t.after(() => app.close());
  for (const url of [
    "/docs/index.html",
    "/docs/swagger-initializer.js",
    "/docs/package.json",
    "/docs/..%2Fpackage.json",
    "/docs/..%2F..%2F..%2Fpackage.json",
    "/docs/toString",
    "/docs/__proto__",
  ]) {
    const res = await app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 404, url);
    assert.deepEqual(res.json(), { error: `No route GET ${url}.` }, url);
  }
  // A deeper path is no route of the page, so it wants the token as any unknown route does.
  assert.equal((await app.inject({ method: "GET", url: "/docs/a/b.js" })).statusCode, 401);
});

test("the page and its files keep the Host check: a rebinding page cannot read them", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  for (const url of ["/docs", "/docs/docs.js"]) {
    const res = await app.inject({ method: "GET", url, headers: { host: "evil.example" } });
    assert.equal(res.statusCode, 403, url);
  }
});

test("files carry an ETag and answer 304 to a client that holds them", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const first = await app.inject({ method: "GET", url: "/docs/swagger-ui.css" });
  const etag = String(first.headers.etag);
  assert.match(etag, /^"[\w-]+"$/);
  assert.equal(first.headers["cache-control"], "no-cache");
  const again = await app.inject({ method: "GET", url: "/docs/swagger-ui.css", headers: { "if-none-match": etag } });
  assert.equal(again.statusCode, 304);
  assert.equal(again.body, "");
});
