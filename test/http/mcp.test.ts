/**
 * `/mcp` in the daemon's process (src/http/mcp/, routes/mcp.ts). Its session table: what keeps it
 * bounded whatever a client does; sessions here are real (the SDK's transport, the route tools' MCP
 * server), and the daemon's routes a fake client whose calls wait until the test answers them, so a
 * call in flight stays in flight. Its configuration, and the route in fastify through `inject`.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, it } from "node:test";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyBaseLogger } from "fastify";
import { MCP_CANCELS_PER_SESSION, MCP_REQUESTS_PER_SESSION } from "../../src/api/mcp.ts";
import { ROUTE_TOOLS } from "../../src/api/tools.ts";
import { createRouteServer } from "../../src/bridge/route-server.ts";
import type { SwarmClient } from "../../src/client/swarm-client.ts";
import { loadConfig } from "../../src/config.ts";
import { isSwarmError } from "../../src/errors.ts";
import { type McpSessionLimits, McpSessions } from "../../src/http/mcp/mcp-sessions.ts";
import { callBackUrl } from "../../src/http/mcp/self-client.ts";
import { setup } from "./fakes.ts";

/** The HTTP response a request's answer is sent on: closed by the test, finished or cut short. */
class Answer extends EventEmitter {
  writableFinished = false;
  /** The answer was sent whole (`finished`), or the client left before its end. */
  end(finished: boolean): void {
    this.writableFinished = finished;
    this.emit("close");
  }
}

/** A call of the daemon's routes the test holds: it answers `{runs: []}` when released. */
interface HeldCall {
  signal: AbortSignal;
  release(): void;
}

const SILENT = { debug: () => undefined, info: () => undefined } as unknown as FastifyBaseLogger;

function table(limits: Partial<McpSessionLimits> = {}, now?: () => number) {
  const calls: HeldCall[] = [];
  const client = {
    call: (_route: unknown, _request: unknown, options?: { signal?: AbortSignal }) =>
      new Promise((resolve, reject) => {
        const signal = options?.signal ?? new AbortController().signal;
        calls.push({ signal, release: () => resolve({ runs: [] }) });
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
  } as unknown as SwarmClient;
  const sessions = new McpSessions({
    limits: { maxSessions: 64, idleMs: 60_000, ...limits },
    openServer: () => createRouteServer({ client }),
    log: SILENT,
    now,
  });
  let nextId = 1;

  /** POSTs `body` (a new session's initialize when `session` is absent). */
  async function post(body: unknown, session?: string) {
    const answer = new Answer();
    const request = new Request("http://127.0.0.1:4600/mcp", {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        ...(session ? { "mcp-session-id": session, "mcp-protocol-version": LATEST_PROTOCOL_VERSION } : {}),
      },
    });
    const asked = answer as unknown as ServerResponse;
    const response = await (session === undefined
      ? sessions.initialize(request, body, asked)
      : sessions.find(session).handle(request, body, asked));
    return { answer, response };
  }

  return {
    sessions,
    calls,
    /** A new session, its initialize answered and its answer ended. */
    async open(): Promise<string> {
      const { answer, response } = await post({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      const id = response.headers.get("mcp-session-id");
      assert.ok(id, `initialize answered ${response.status}`);
      await response.text();
      answer.end(true);
      return id;
    },
    /** A tools/call of swarm_list_runs, left in flight: its route call is held. */
    async call(session: string) {
      const before = calls.length;
      const id = nextId++;
      const sent = await post(
        { jsonrpc: "2.0", id, method: "tools/call", params: { name: "swarm_list_runs", arguments: {} } },
        session,
      );
      while (calls.length === before) await new Promise((r) => setImmediate(r));
      return { ...sent, id, held: calls.at(-1) as HeldCall };
    },
    /** A tools/list, answered and ended. */
    async list(session: string): Promise<void> {
      const { answer, response } = await post({ jsonrpc: "2.0", id: nextId++, method: "tools/list" }, session);
      assert.match(await response.text(), /swarm_list_runs/);
      answer.end(true);
    },
    post,
  };
}

const refusedWith = (code: string) => (err: unknown) => isSwarmError(err) && err.code === code;

describe("/mcp sessions", () => {
  it("keeps at most maxSessions: a new one closes the least recently used with nothing in flight", async () => {
    const t = table({ maxSessions: 2 });
    const a = await t.open();
    const b = await t.open();
    await t.list(a); // b is now the least recently used
    const c = await t.open();
    assert.equal(t.sessions.size, 2);
    assert.throws(() => t.sessions.find(b), refusedWith("MCP_SESSION_NOT_FOUND"));
    assert.doesNotThrow(() => t.sessions.find(a));
    assert.doesNotThrow(() => t.sessions.find(c));
    await t.sessions.closeAll();
  });

  it("refuses a new session with 503 while every session has a call in flight, and opens it once one ends", async () => {
    const t = table({ maxSessions: 2 });
    const calls = [await t.call(await t.open()), await t.call(await t.open())];
    await assert.rejects(t.open(), refusedWith("MCP_SESSIONS_FULL"));
    const first = calls[0];
    assert.ok(first);
    first.held.release();
    assert.match(await first.response.text(), /"result"/, "the call is answered");
    first.answer.end(true);
    await t.open();
    assert.equal(t.sessions.size, 2);
    await t.sessions.closeAll();
  });

  it(`takes at most ${MCP_REQUESTS_PER_SESSION} requests in flight per session (429), and a call whose client left is cancelled`, async () => {
    const t = table();
    const session = await t.open();
    const open = [];
    for (let i = 0; i < MCP_REQUESTS_PER_SESSION; i++) open.push(await t.call(session));
    await assert.rejects(t.call(session), refusedWith("MCP_SESSION_BUSY"));
    const left = open[0];
    assert.ok(left);
    left.answer.end(false); // the client went away before the answer
    await new Promise((r) => setImmediate(r));
    assert.equal(left.held.signal.aborted, true, "the route call it waited on is dropped");
    const next = await t.call(session);
    assert.equal(next.held.signal.aborted, false);
    await t.sessions.closeAll();
  });

  it("closes a session idle for idleMs, not one with a call in flight", async () => {
    let now = 1_000_000;
    const t = table({ idleMs: 1_000 }, () => now);
    const idle = await t.open();
    const busy = await t.open();
    await t.call(busy);
    now += 999;
    t.sessions.sweep();
    assert.equal(t.sessions.size, 2);
    now += 1;
    t.sessions.sweep();
    assert.throws(() => t.sessions.find(idle), refusedWith("MCP_SESSION_NOT_FOUND"));
    assert.doesNotThrow(() => t.sessions.find(busy));
    await t.sessions.closeAll();
  });

  it("a call the client cancels ends its answer; a session is closed after its cancels reach the limit", async () => {
    const t = table();
    const session = await t.open();
    const call = await t.call(session);
    const cancel = (requestId: number) => ({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId, reason: "test" },
    });
    const sent = await t.post(cancel(call.id), session);
    assert.equal(sent.response.status, 202);
    assert.equal(call.held.signal.aborted, true);
    assert.doesNotMatch(await call.response.text(), /"result"|"error"/, "the stream ended without an answer");
    for (let i = 1; i < MCP_CANCELS_PER_SESSION; i++) (await t.post(cancel(10_000 + i), session)).answer.end(true);
    await new Promise((r) => setImmediate(r));
    assert.throws(() => t.sessions.find(session), refusedWith("MCP_SESSION_NOT_FOUND"));
    await t.sessions.closeAll();
  });

  it("closing answers every open call with an error and ends its stream; the session is gone", async () => {
    const t = table();
    const session = await t.open();
    const call = await t.call(session);
    await t.sessions.closeAll();
    assert.equal(call.held.signal.aborted, true);
    const text = await call.response.text();
    assert.match(text, /"error":\{"code":-32000,"message":"swarmd is shutting down"\}/);
    assert.throws(() => t.sessions.find(session), refusedWith("MCP_SESSION_NOT_FOUND"));
    assert.equal(t.sessions.size, 0);
  });
});

describe("/mcp's configuration", () => {
  it("SWARM_MCP_MAX_SESSIONS and SWARM_MCP_SESSION_IDLE_MS: defaults, values, refusals", () => {
    assert.deepEqual(loadConfig({}).mcp, { maxSessions: 64, idleMs: 1_800_000 });
    assert.deepEqual(loadConfig({ SWARM_MCP_MAX_SESSIONS: "3", SWARM_MCP_SESSION_IDLE_MS: "5000" }).mcp, {
      maxSessions: 3,
      idleMs: 5000,
    });
    for (const bad of [{ SWARM_MCP_MAX_SESSIONS: "0" }, { SWARM_MCP_SESSION_IDLE_MS: "999" }])
      assert.throws(() => loadConfig(bad), /invalid configuration: SWARM_MCP_/);
  });

  it("the tools call the daemon back where it listens: a wildcard on loopback, SWARM_HOST's name by that name", () => {
    const at = (address: string, host?: string) => callBackUrl({ address, port: 4600 }, host);
    assert.equal(at("127.0.0.1"), "http://127.0.0.1:4600");
    assert.equal(at("0.0.0.0", "0.0.0.0"), "http://127.0.0.1:4600");
    assert.equal(at("::", "::"), "http://[::1]:4600");
    assert.equal(at("::1", "[::1]"), "http://[::1]:4600");
    assert.equal(at("127.0.0.1", "localhost"), "http://127.0.0.1:4600");
    assert.equal(at("10.0.0.5", "swarmd.internal"), "http://swarmd.internal:4600");
    assert.equal(at("10.0.0.5", "10.0.0.5"), "http://10.0.0.5:4600");
  });
});

describe("/mcp in fastify (inject, not listening)", () => {
  it("opens a session, lists the tools and ends it; the route's own refusals are {error} bodies", async (t) => {
    const { app } = setup({ mcp: { maxSessions: 1 } });
    t.after(() => app.close());
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      app.inject({
        method: "POST",
        url: "/mcp",
        headers: { "content-type": "application/json", ...headers },
        payload: JSON.stringify(body),
      });
    const opened = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    assert.equal(opened.statusCode, 200, opened.body);
    assert.equal(opened.headers["content-type"], "application/json; charset=utf-8");
    const session = String(opened.headers["mcp-session-id"]);
    const listed = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": session });
    assert.equal(listed.json().result.tools.length, Object.keys(ROUTE_TOOLS).length);
    const refused = await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, { origin: "http://evil.example" });
    assert.deepEqual([refused.statusCode, Object.keys(refused.json())], [403, ["error"]]);
    const ended = await app.inject({ method: "DELETE", url: "/mcp", headers: { "mcp-session-id": session } });
    assert.equal(ended.statusCode, 200);
    const gone = await post({ jsonrpc: "2.0", id: 4, method: "tools/list" }, { "mcp-session-id": session });
    assert.deepEqual([gone.statusCode, Object.keys(gone.json())], [404, ["error"]]);
  });
});
