import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { isSwarmError } from "../../src/errors.ts";
import { call } from "../support/daemon.ts";
import { type DaemonProcess, spawnDaemon } from "../support/daemon-process.ts";

/** One request with exactly these head lines (no Host unless given), on its own socket; the raw answer. */
function rawHead(port: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
    socket.write(`${[...lines, "connection: close"].join("\r\n")}\r\n\r\n`);
  });
}

describe("the API answers only to its own names (DNS rebinding)", () => {
  let d: DaemonProcess;
  let port: number;
  let dataDir: string;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "swarmd-host-"));
    d = await spawnDaemon(dataDir, { SWARM_ALLOWED_HOSTS: "swarmd.internal, 10.9.8.7" });
    port = Number(new URL(d.url).port);
  });
  after(async () => {
    await d.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("refuses a web page's rebound name with 403 naming it, on every route and before anything happens", async () => {
    // The browser of a page at http://evil.example:<port> that re-resolved its name to 127.0.0.1.
    const headers = { host: `evil.example:${port}` };
    const refused = {
      status: 403,
      body: {
        error: `Host "evil.example:${port}" is not served here: only 127.0.0.1, localhost, [::1], SWARM_HOST and the names in SWARM_ALLOWED_HOSTS are.`,
      },
    };
    const health = await call(d.url, "GET", "/health", undefined, headers);
    assert.deepEqual({ status: health.status, body: health.body }, refused);
    const created = await call(
      d.url,
      "POST",
      "/runs",
      { spec: { name: "rebound", script: [] }, keepAlive: true },
      headers,
    );
    assert.deepEqual({ status: created.status, body: created.body }, refused);
    const unknown = await call(d.url, "GET", "/no-such-route", undefined, headers);
    assert.deepEqual(
      { status: unknown.status, body: unknown.body },
      refused,
      "refused before routing: no 404 to map the API by",
    );
    const bare = await call(d.url, "GET", "/health", undefined, { host: "evil.example" });
    assert.equal(bare.status, 403);
    assert.match(bare.body.error, /"evil\.example"/);
    // Names that only look local are other names.
    for (const host of [
      "localhost.evil.example",
      "127.0.0.1.nip.io",
      "127.0.0.2",
      "0.0.0.0",
      "[::2]",
      "::1",
      "localhost:80:80",
    ]) {
      const reply = await call(d.url, "GET", "/health", undefined, { host });
      assert.equal(reply.status, 403, host);
    }
  });

  it("serves loopback names with or without the port, SWARM_HOST and SWARM_ALLOWED_HOSTS, and no other name", async () => {
    const hosts = [
      `localhost:${port}`,
      "localhost",
      "LocalHost",
      `127.0.0.1:${port}`,
      "127.0.0.1",
      `[::1]:${port}`,
      "[::1]",
      `swarmd.internal:${port}`,
      "SWARMD.internal",
      "10.9.8.7",
    ];
    for (const host of hosts) {
      const reply = await call(d.url, "GET", "/health", undefined, { host });
      assert.deepEqual([reply.status, reply.body], [200, { ok: true }], host);
    }
    // A neighbour of the listed names is still refused: the list admits exactly what it names.
    for (const host of ["other.internal", "internal", "10.9.8.6"])
      assert.equal((await call(d.url, "GET", "/health", undefined, { host })).status, 403, host);
    const created = await call(
      d.url,
      "POST",
      "/runs",
      { spec: { name: "local", script: [] }, keepAlive: true },
      { host: `localhost:${port}` },
    );
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const run = await call(d.url, "GET", `/runs/${created.body.runId}`, undefined, { host: `swarmd.internal:${port}` });
    assert.equal(run.status, 200);
    assert.equal((await call(d.url, "DELETE", `/runs/${created.body.runId}`)).status, 204);
  });

  it("refuses a request with no Host header, or an empty one", async () => {
    for (const head of [["GET /health HTTP/1.1"], ["GET /health HTTP/1.1", "host:"], ["GET /health HTTP/1.0"]]) {
      const answer = await rawHead(port, head);
      assert.match(answer, /^HTTP\/1\.[01] 403 /, head.join(" | "));
      assert.match(
        answer,
        /\r\n\r\n\{"error":"The request has no Host header; it must name 127\.0\.0\.1, localhost, \[::1\], SWARM_HOST or a name in SWARM_ALLOWED_HOSTS\."\}$/,
      );
    }
  });
});

describe("listening beyond loopback", () => {
  it("is refused at start without SWARM_TOKEN, naming both variables, and accepted with one", () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "swarmd.example"]) {
      assert.throws(
        () => loadConfig({ SWARM_HOST: host }),
        (err: unknown) => {
          assert.ok(isSwarmError(err, "CONFIG_INVALID"), String(err));
          assert.match(
            err.message,
            new RegExp(`SWARM_HOST=${host.replace(/\./g, "\\.")} is not a loopback address and SWARM_TOKEN is not set`),
          );
          return true;
        },
      );
    }
    assert.equal(loadConfig({ SWARM_HOST: "0.0.0.0", SWARM_TOKEN: "s3cret" }).host, "0.0.0.0");
    for (const host of ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
      assert.equal(loadConfig({ SWARM_HOST: host }).host, host);
  });

  it("the daemon process exits 1 with that one line", async () => {
    const { spawnSync } = await import("node:child_process");
    const { SWARMD_ROOT } = await import("../../src/harness/launch.ts");
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-host-"));
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        SWARM_HOST: "0.0.0.0",
        SWARM_PORT: "0",
        SWARM_DATA_DIR: dataDir,
      };
      delete env.SWARM_TOKEN;
      const started = spawnSync(process.execPath, ["--import", "tsx", join(SWARMD_ROOT, "src/main.ts")], {
        cwd: SWARMD_ROOT,
        env,
        encoding: "utf8",
        timeout: 60_000,
      });
      assert.equal(started.status, 1, started.stdout + started.stderr);
      assert.deepEqual(started.stderr.trim().split("\n"), [
        "swarmd: invalid configuration: SWARM_HOST=0.0.0.0 is not a loopback address and SWARM_TOKEN is not set; set SWARM_TOKEN, or listen on 127.0.0.1",
      ]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
