/**
 * The tool bridge over HTTP: the daemon's `/mcp` driven by the MCP SDK's own Streamable HTTP client,
 * as Claude Code or Cursor would, against a daemon in this process with a token. The route tools
 * (and not the local ones), a run created, followed and its approval answered, progress while a
 * call waits; the refusals: no token, a foreign Origin, a foreign Host; sessions ended by the
 * client and by the daemon closing.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { ROUTE_TOOLS } from "../../src/api/tools.ts";
import { call, type Daemon, type Json, startDaemon } from "../support/daemon.ts";

const TOKEN = "mcp-http-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Calls a tool; its error flag, text and structured content. */
  tool(name: string, args?: Record<string, unknown>, onprogress?: (p: Json) => void): Promise<Json>;
}

/** The SDK's client on `d`'s `/mcp`, with `headers` on every request (the token unless told otherwise). */
async function connect(d: Daemon, headers: Record<string, string> = AUTH): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: "swarmd-http-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    transport,
    async tool(name, args = {}, onprogress) {
      const answer: Json = await client.callTool({ name, arguments: args }, undefined, {
        timeout: 120_000,
        onprogress,
      });
      const text = (answer.content as Json[]).map((c) => (c.type === "text" ? c.text : "")).join("");
      return { isError: answer.isError === true, text, data: answer.structuredContent };
    },
  };
}

/** One POST of `body` to `/mcp`, answered whole (a stream is read to its end). */
async function post(d: Daemon, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${d.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH, ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const initialize = (protocolVersion = LATEST_PROTOCOL_VERSION) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "curl", version: "1" } },
});

/** The refusal `{"error"}` of a status, as every route of the daemon answers. */
function refusal(answer: { status: number; text: string }, status: number, message: RegExp): void {
  assert.equal(answer.status, status, answer.text);
  const body = JSON.parse(answer.text);
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.match(body.error, message);
}

/** The SDK client's error for a refused request: the status, and the daemon's `{"error"}` in its message. */
const sdkRefusal = (status: number, message: RegExp) => (err: Json) =>
  err.code === status && message.test(String(err.message));

describe("the tool bridge over HTTP (/mcp) with the SDK's Streamable HTTP client", () => {
  let d: Daemon;
  let mcp: Connected;

  before(async () => {
    d = await startDaemon({ token: TOKEN });
    mcp = await connect(d);
  });
  after(async () => {
    await mcp?.client.close();
    await d?.stop();
  });

  it("opens a session on protocol 2025-11-25 and lists the route tools, without the local ones", async () => {
    assert.equal(LATEST_PROTOCOL_VERSION, "2025-11-25");
    assert.equal(mcp.transport.protocolVersion, "2025-11-25");
    assert.match(mcp.transport.sessionId ?? "", /^[0-9a-f-]{36}$/);
    assert.equal(mcp.client.getServerVersion()?.name, "swarmd");
    assert.match(mcp.client.getInstructions() ?? "", /given inline \(spec\)/);
    const { tools } = await mcp.client.listTools();
    assert.deepEqual(
      tools.map((tool) => tool.name),
      Object.keys(ROUTE_TOOLS),
    );
    for (const local of ["swarm_start_service", "swarm_spec_add", "swarm_spec_list", "swarm_spec_remove"])
      assert.ok(!tools.some((tool) => tool.name === local), `${local} is the stdio bridge's alone`);
    const create = tools.find((tool) => tool.name === "swarm_create_run")?.inputSchema as Json;
    assert.deepEqual(Object.keys(create.properties).sort(), ["budget", "keepAlive", "prompt", "spec"]);
    const spawn = tools.find((tool) => tool.name === "swarm_spawn_agent")?.inputSchema as Json;
    assert.equal(spawn.properties.specName, undefined, "no saved specs here");
    const named = await mcp.tool("swarm_create_run", { specName: "saved", prompt: "go" });
    assert.equal(named.isError, true);
    assert.match(named.text, /pass spec \(inline\)/);
  });

  it("creates a run, follows it, answers its approval, and reports progress while a call waits", async () => {
    const created = await mcp.tool("swarm_create_run", {
      spec: {
        name: "careful",
        approve: [{ tool: "bash" }],
        script: [{ tool: "bash", args: { command: "echo hi" } }, { text: "done: {{lastToolResult}}" }],
      },
      prompt: "go",
      keepAlive: true,
    });
    assert.equal(created.isError, false, created.text);
    const { runId, rootAgentId: root } = created.data;

    const asked = await mcp.tool("swarm_watch_events", {
      runId,
      untilTypes: ["permission_request"],
      maxWaitSeconds: 60,
    });
    assert.equal(asked.data.stoppedBy, "until-type", asked.text);
    assert.deepEqual(
      asked.data.events.slice(0, 2).map((e: Json) => e.type),
      ["run_started", "agent_spawned"],
    );
    const requestId = asked.data.events.at(-1).data.requestId;

    // The call is held for the approval: a 6 s wait ends pending, with progress on the way.
    const progress: Json[] = [];
    const waited = await mcp.tool("swarm_get_result", { agentId: root, waitSeconds: 6 }, (p) => progress.push(p));
    assert.equal(waited.data.state, "pending", waited.text);
    assert.ok(progress.length >= 1, "a progress notification came over HTTP");
    assert.deepEqual([progress[0].total, progress[0].message], [6, `waiting for the result of ${root}`]);

    const listed = await mcp.tool("swarm_list_permissions", { runId });
    assert.deepEqual(
      listed.data.permissions.map((p: Json) => [p.requestId, p.tool, p.args.command]),
      [[requestId, "bash", "echo hi"]],
    );
    const allowed = await mcp.tool("swarm_resolve_permission", { agentId: root, requestId, decision: "allow" });
    assert.equal(allowed.isError, false, allowed.text);
    assert.deepEqual([allowed.data.decision, allowed.data.by], ["allow", "operator"]);
    const result = await mcp.tool("swarm_get_result", { agentId: root, waitSeconds: 60 });
    assert.equal(result.data.result, "done: hi\n");

    const rest = await mcp.tool("swarm_watch_events", {
      runId,
      afterSeq: asked.data.lastSeq,
      untilTypes: ["handle_settled"],
      maxWaitSeconds: 30,
    });
    const types = rest.data.events.map((e: Json) => e.type);
    assert.ok(types.includes("permission_resolved") && types.at(-1) === "handle_settled", types.join(", "));
    const again = await mcp.tool("swarm_resolve_permission", { agentId: root, requestId, decision: "deny" });
    assert.deepEqual([again.isError, again.data.status], [true, 409], "the route's own refusal, as a tool error");
    await mcp.tool("swarm_delete_run", { runId, purge: true });
  });

  it("refuses a request without the token (401), as every route does", async () => {
    refusal(await post(d, initialize(), { authorization: "" }), 401, /bearer token/i);
    const without = await fetch(`${d.url}/mcp`, { method: "POST", body: "{}" });
    assert.equal(without.headers.get("www-authenticate"), "Bearer");
    await assert.rejects(connect(d, {}), sdkRefusal(401, /Missing or wrong bearer token/));
  });

  it("refuses an Origin other than the daemon's own (403), and takes its own", async () => {
    const port = new URL(d.url).port;
    for (const origin of [
      "http://evil.example",
      `http://evil.example:${port}`,
      "http://localhost:1",
      `https://127.0.0.1:${port}`,
      "null",
    ])
      refusal(await post(d, initialize(), { origin }), 403, /^Origin ".*" is not the daemon's own/);
    await assert.rejects(
      connect(d, { ...AUTH, origin: "http://evil.example" }),
      sdkRefusal(403, /Origin \\"http:\/\/evil.example\\" is not the daemon's own/),
    );
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      const own = await post(d, initialize(), { origin });
      assert.equal(own.status, 200, `${origin}: ${own.text}`);
    }
    refusal(await post(d, initialize(), { origin: "http://evil.example", authorization: "" }), 401, /token/);
  });

  it("refuses a Host the daemon does not serve (403), before the token is looked at", async () => {
    for (const method of ["POST", "GET", "DELETE"]) {
      const answer = await call(d.url, method, "/mcp", method === "POST" ? initialize() : undefined, {
        host: `evil.example:${new URL(d.url).port}`,
      });
      assert.equal(answer.status, 403, method);
      assert.match(answer.body.error, /is not served here/);
    }
  });

  it("speaks the older protocol versions the SDK takes, and refuses an unknown one", async () => {
    for (const version of ["2025-06-18", "2025-03-26", "2024-11-05"]) {
      const answer = await post(d, initialize(version), { accept: "application/json" });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(JSON.parse(answer.text).result.protocolVersion, version);
    }
    const session = mcp.transport.sessionId ?? "";
    refusal(
      await post(
        d,
        { jsonrpc: "2.0", id: 9, method: "tools/list" },
        { "mcp-session-id": session, "mcp-protocol-version": "1999-01-01" },
      ),
      400,
      /^header\.MCP-Protocol-Version: must be one of 2025-11-25, /,
    );
  });

  it("answers in JSON or as an event stream, as the client's Accept asks", async () => {
    const json = await post(d, initialize());
    assert.equal(json.headers.get("content-type"), "application/json; charset=utf-8");
    assert.match(json.headers.get("mcp-session-id") ?? "", /^[0-9a-f-]{36}$/);
    assert.equal(JSON.parse(json.text).result.serverInfo.name, "swarmd");
    const stream = await post(d, initialize(), { accept: "application/json, text/event-stream" });
    assert.equal(stream.headers.get("content-type"), "text/event-stream");
    assert.match(stream.text, /^event: message\ndata: \{"result":\{"protocolVersion":"2025-11-25"/m);
    refusal(
      await post(d, initialize(), { accept: "text/html" }),
      406,
      /neither application\/json nor text\/event-stream/,
    );
  });

  it("needs a session for everything but initialize; a session the client deletes answers 404 after", async () => {
    refusal(
      await post(d, { jsonrpc: "2.0", id: 2, method: "tools/list" }),
      400,
      /^header\.Mcp-Session-Id: is required on POST \/mcp but for an initialize request/,
    );
    refusal(
      await post(d, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": "nope" }),
      404,
      /No open MCP session has id "nope"/,
    );
    refusal(await post(d, { jsonrpc: "1.0" }), 400, /^body/);
    const other = await connect(d);
    const id = other.transport.sessionId ?? "";
    assert.equal((await other.client.listTools()).tools.length, Object.keys(ROUTE_TOOLS).length);
    await other.transport.terminateSession();
    await other.client.close();
    refusal(
      await post(d, { jsonrpc: "2.0", id: 3, method: "tools/list" }, { "mcp-session-id": id }),
      404,
      /initialize/,
    );
    const get = await fetch(`${d.url}/mcp`, { headers: { ...AUTH, accept: "text/event-stream" } });
    refusal({ status: get.status, text: await get.text() }, 405, /no standalone MCP stream/);
    assert.equal(get.headers.get("allow"), "POST, DELETE");
  });
});

describe("the daemon closing with MCP calls in flight", () => {
  it("answers each call with an error at once, and closes without waiting for the calls' waits", async () => {
    const d = await startDaemon({ token: TOKEN });
    const mcp = await connect(d);
    try {
      const created = await mcp.tool("swarm_create_run", {
        spec: { name: "slow", script: [{ text: "late", delayMs: 600_000 }] },
        prompt: "go",
      });
      const waiting = [
        mcp.tool("swarm_get_result", { agentId: created.data.rootAgentId, waitSeconds: 200 }),
        mcp.tool("swarm_watch_events", { runId: created.data.runId, untilTypes: ["never"], maxWaitSeconds: 200 }),
      ].map((call) =>
        call.then(
          () => "answered",
          (err: Error) => err.message,
        ),
      );
      await new Promise((r) => setTimeout(r, 500));
      const started = Date.now();
      await d.stop();
      assert.ok(Date.now() - started < 10_000, `closed in ${Date.now() - started} ms`);
      assert.deepEqual(await Promise.all(waiting), [
        "MCP error -32000: swarmd is shutting down",
        "MCP error -32000: swarmd is shutting down",
      ]);
    } finally {
      await mcp.client.close();
    }
  });
});
