/**
 * The console's files at `/` and `/console/<file>`: open without the token (a browser cannot send
 * one on a page load), under a strict content security policy, naming nothing outside the build;
 * a clear 503 when it was not built. The page in a browser: test/console/.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CONSOLE_DIR } from "../../src/http/console-page.ts";
import { setup } from "./fakes.ts";

const TOKEN = "s3cret-token";

test("GET / answers the console's page, open, under a policy that allows only the daemon's own scripts and calls", async (t) => {
  const { app } = setup({ token: TOKEN });
  t.after(() => app.close());
  const page = await app.inject({ method: "GET", url: "/" });
  assert.equal(page.statusCode, 200, page.body);
  assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
  assert.doesNotMatch(page.body, /\bhttps?:\/\//i, "no other host named");
  assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)/i, "no inline script");
  const policy = String(page.headers["content-security-policy"]);
  for (const directive of [
    "default-src 'self'",
    "script-src 'self';",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ])
    assert.ok(policy.includes(directive), `${directive} in ${policy}`);
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);

  const references = [...page.body.matchAll(/\b(?:src|href)="(\/console\/[^"]+)"/g)].map((m) => m[1] ?? "");
  assert.ok(
    references.some((r) => r.endsWith(".js")) && references.some((r) => r.endsWith(".css")),
    references.join(" "),
  );
  for (const url of references) {
    const res = await app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 200, url);
    assert.match(String(res.headers["content-type"]), url.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
    assert.match(String(res.headers["cache-control"]), /immutable/, "named by content, so kept");
    assert.equal(res.headers["x-content-type-options"], "nosniff");
    const again = await app.inject({ method: "GET", url, headers: { "if-none-match": String(res.headers.etag) } });
    assert.equal(again.statusCode, 304);
  }
  const script = (await app.inject({ method: "GET", url: references.find((r) => r.endsWith(".js")) ?? "" })).body;
  assert.ok(!/\bnew EventSource\(/.test(script), "the stream is read with fetch, which can carry the token");
});

test("/console/ serves only the build's files: no folder, no dot file, no other type", async (t) => {
  const { app } = setup({ token: TOKEN });
  t.after(() => app.close());
  for (const url of [
    "/console/index.html",
    "/console/..%2F..%2Fpackage.json",
    "/console/%2E%2E%2Fharness%2Fboot.cjs",
    "/console/.hidden.js",
    "/console/nope-123.js",
    "/console/",
    "/console/a%00.js",
  ]) {
    const res = await app.inject({ method: "GET", url });
    assert.equal(res.statusCode, 404, `${url}: ${res.statusCode} ${res.body.slice(0, 100)}`);
    assert.match(JSON.parse(res.body).error, /No route GET/);
  }
  // The API around it still wants the token.
  assert.equal((await app.inject({ method: "GET", url: "/runs" })).statusCode, 401);
});

test("without a build, GET / is a 503 that says how to build the console", async (t) => {
  const empty = mkdtempSync(join(tmpdir(), "swarmd-console-"));
  const { app } = setup({ consoleDir: empty });
  t.after(async () => {
    await app.close();
    rmSync(empty, { recursive: true, force: true });
  });
  const res = await app.inject({ method: "GET", url: "/" });
  assert.equal(res.statusCode, 503);
  assert.match(JSON.parse(res.body).error, /console is not built.*npm run build:console/);
  assert.ok(CONSOLE_DIR.endsWith("/dist/console/"));
});
