/**
 * The tool bridge over HTTP as the MCP Inspector sees it: its CLI (`mcp-inspector --cli <url>
 * --transport http`, the npm package `@modelcontextprotocol/inspector`, a dev dependency), run as a
 * child process against a daemon in this process on a free loopback port. Lists the tools, creates
 * a run, follows it and answers its approval; refused without the token and from a foreign Origin.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ROUTE_TOOLS } from "../../src/api/tools.ts";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";

const TOKEN = "inspector-token";
const PACKAGE = join(SWARMD_ROOT, "node_modules/@modelcontextprotocol/inspector");
const BIN = join(
  PACKAGE,
  (JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8")) as Json).bin["mcp-inspector"],
);

interface Run {
  code: number;
  /** What it printed as JSON (`--format json`): `{result}` on stdout, or `{error}` on stderr. */
  out: Json;
  stderr: string;
}

describe("the tool bridge over HTTP with the MCP Inspector's CLI", () => {
  let d: Daemon;
  let home: string;

  before(async () => {
    d = await startDaemon({ token: TOKEN });
    // The Inspector keeps a catalog and secrets under HOME: a folder of the test's own.
    home = mkdtempSync(join(tmpdir(), "swarmd-inspector-"));
  });
  after(async () => {
    await d?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  /** `mcp-inspector --cli <daemon>/mcp --transport http` with `args`, sending the token unless `headers` replace it. */
  function inspector(args: string[], headers = [`Authorization: Bearer ${TOKEN}`]): Promise<Run> {
    const argv = [
      BIN,
      "--cli",
      `${d.url}/mcp`,
      "--transport",
      "http",
      "--format",
      "json",
      "--stored-auth-only", // never an interactive OAuth flow
      ...headers.flatMap((header) => ["--header", header]),
      ...args,
    ];
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        argv,
        { env: { PATH: process.env.PATH ?? "", HOME: home }, timeout: 120_000 },
        (err, stdout, stderr) => {
          const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
          resolve({ code, out: lastJson(stdout) ?? lastJson(stderr), stderr });
        },
      );
    });
  }

  /** `tools/call` of `name` with `args` (each `key=value`, JSON values parsed by the CLI); its structured content. */
  async function tool(name: string, args: Record<string, unknown>): Promise<Json> {
    const run = await inspector([
      "--method",
      "tools/call",
      "--tool-name",
      name,
      ...Object.entries(args).flatMap(([key, value]) => [
        "--tool-arg",
        `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
      ]),
    ]);
    assert.equal(run.code, 0, `${name}: ${JSON.stringify(run.out).slice(0, 500)} ${run.stderr}`);
    assert.notEqual(run.out.result.isError, true, JSON.stringify(run.out).slice(0, 500));
    return run.out.result.structuredContent;
  }

  it("lists the route tools", async () => {
    const run = await inspector(["--method", "tools/list"]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      run.out.result.tools.map((t: Json) => t.name),
      Object.keys(ROUTE_TOOLS),
    );
  });

  it("creates a run, follows it and answers its approval, one CLI call each", async () => {
    const created = await tool("swarm_create_run", {
      spec: {
        name: "inspected",
        approve: [{ tool: "bash" }],
        script: [{ tool: "bash", args: { command: "echo hi" } }, { text: "done: {{lastToolResult}}" }],
      },
      prompt: "go",
      keepAlive: true,
    });
    const asked = await tool("swarm_watch_events", {
      runId: created.runId,
      untilTypes: ["permission_request"],
      maxWaitSeconds: 60,
    });
    assert.equal(asked.stoppedBy, "until-type");
    const requestId = asked.events.at(-1).data.requestId;
    const allowed = await tool("swarm_resolve_permission", {
      agentId: created.rootAgentId,
      requestId,
      decision: "allow",
    });
    assert.equal(allowed.decision, "allow");
    const result = await tool("swarm_get_result", { agentId: created.rootAgentId, waitSeconds: 60 });
    assert.equal(result.result, "done: hi\n");
  });

  it("is refused without the token and from a foreign Origin, with the daemon's own words", async () => {
    const anonymous = await inspector(["--method", "tools/list"], []);
    assert.notEqual(anonymous.code, 0);
    assert.match(anonymous.out.error.message, /Missing or wrong bearer token/);
    const foreign = await inspector(
      ["--method", "tools/list"],
      [`Authorization: Bearer ${TOKEN}`, "Origin: http://evil.example"],
    );
    assert.notEqual(foreign.code, 0);
    assert.equal(foreign.out.error.status, 403);
    assert.match(foreign.out.error.message, /is not the daemon's own/);
  });
});

/** The last line of `text` that is a JSON object (the CLI may print a note before it). */
function lastJson(text: string): Json | undefined {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    const line = trimmed.split("\n").findLast((l) => l.startsWith("{"));
    return line === undefined ? undefined : JSON.parse(line);
  }
}
