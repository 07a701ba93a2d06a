/**
 * The daemon's log: readable lines on a terminal, JSON otherwise; request lines at debug only;
 * lifecycle lines at info; the bearer token never written, whatever carries it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { createLogger } from "../../src/log/logger.ts";
import { call } from "../support/daemon.ts";
import { spawnDaemon } from "../support/daemon-process.ts";
import { until } from "../support/poll.ts";

const TOKEN = "tok-3f9a1c77e2b54d1e";

function capture() {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

describe("logging", () => {
  it("JSON lines: the token is redacted in fields and in message text, wherever it appears", () => {
    const out = capture();
    const log = createLogger({ level: "debug", format: "json", token: TOKEN, destination: out.stream });
    log.info({ req: { headers: { authorization: `Bearer ${TOKEN}` } } }, "a request");
    log.info({ token: TOKEN, nested: { token: TOKEN } }, "fields");
    log.warn(`the header was Bearer ${TOKEN} and the token ${TOKEN}`);
    log.debug("quiet");
    const lines = out
      .text()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 4);
    assert.ok(!out.text().includes(TOKEN), out.text());
    assert.match(out.text(), /\[redacted\]/);
    assert.equal(lines[3]?.level, 20, "debug entries at debug");
  });

  it("pretty lines for people: level and message on one line, no JSON", () => {
    const out = capture();
    const log = createLogger({ level: "info", format: "pretty", token: TOKEN, destination: out.stream });
    log.info(`swarmd listening, token ${TOKEN}`);
    log.debug("hidden");
    const text = out.text();
    assert.match(text, /INFO.*swarmd listening, token \[redacted\]/);
    assert.doesNotMatch(text, /hidden/);
    assert.throws(() => JSON.parse(text.trim()));
  });

  it("a daemon: JSON when not a terminal, request lines only at debug, lifecycle at info, no token anywhere", async () => {
    for (const level of ["debug", "info"] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), "swarmd-log-"));
      // What the daemon logs, not what a sandbox does: the simulated runtime will do.
      const d = await spawnDaemon(dataDir, {
        SWARM_RUNTIME: "simulated",
        SWARM_TOKEN: TOKEN,
        SWARM_LOG_LEVEL: level,
        SWARM_LOG_FORMAT: "json",
      });
      try {
        const auth = { authorization: `Bearer ${TOKEN}` };
        // A run whose spawn a budget refuses: an agent that ends with an error.
        const created = await call(
          d.url,
          "POST",
          "/runs",
          { spec: { name: "x", script: [] }, keepAlive: true, budget: { maxAgents: 0 } },
          auth,
        );
        const refused = await call(
          d.url,
          "POST",
          `/runs/${created.body.runId}/agents`,
          { parentAgentId: created.body.rootAgentId, spec: { name: "kid", script: [] } },
          auth,
        );
        assert.equal(refused.status, 202);
        assert.equal((await call(d.url, "GET", "/runs", undefined, { authorization: "Bearer wrong" })).status, 401);
        await call(d.url, "DELETE", `/runs/${created.body.runId}`, undefined, auth);
        await until(() => /ended budget-exceeded: spawn refused/.test(d.output()), "the refused spawn logged", 30_000);
      } finally {
        await d.kill("SIGTERM");
        rmSync(dataDir, { recursive: true, force: true });
      }
      const output = d.output();
      assert.ok(!output.includes(TOKEN), `${level}: the token leaked:\n${output}`);
      const lines = output
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { level: number; msg: string; url?: string; status?: number });
      assert.ok(
        lines.some((l) => l.level === 30 && /swarmd listening on http/.test(l.msg)),
        `${level}: start at info`,
      );
      assert.ok(
        lines.some((l) => l.level === 30 && /ended budget-exceeded: spawn refused/.test(l.msg)),
        `${level}: an end with an error at info`,
      );
      const requests = lines.filter((l) => l.msg === "request");
      if (level === "debug") {
        assert.ok(
          requests.some((l) => l.level === 20 && l.url === "/runs" && l.status === 401),
          JSON.stringify(requests),
        );
      } else {
        assert.deepEqual(requests, [], "no request lines at info");
      }
    }
  });
});
