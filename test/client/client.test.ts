/**
 * The client of the bridge and the CLI against a loopback server that answers as the test says:
 * the requests it sends (paths, queries, bodies, token), the errors its callers tell apart, and
 * the event stream: frames split anywhere, resumption with Last-Event-ID, and a message too large
 * to hold refused rather than buffered.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { adoptChanges, forkAgent, getChanges, waitForAgents } from "../../src/api/forks.ts";
import { DEFAULT_WAIT_MANY_MS, MAX_WAIT_MANY_MS } from "../../src/api/limits.ts";
import { EventStreamError, ServiceError, ServiceUnreachableError } from "../../src/client/client-errors.ts";
import type { Endpoint } from "../../src/client/endpoint.ts";
import { MAX_MESSAGE_CHARS, type SwarmEvent, streamEvents } from "../../src/client/event-stream.ts";
import { httpCall } from "../../src/client/http-call.ts";
import {
  CASCADE_TIMEOUT_MS,
  COPY_TIMEOUT_MS,
  callTimeoutMs,
  createSwarmClient,
  WAIT_MARGIN_MS,
} from "../../src/client/swarm-client.ts";
import { freePort } from "../support/daemon-process.ts";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A loopback server calling `answer` for each request, with every request it got. */
async function serve(answer: (req: Seen, res: ServerResponse, n: number) => void): Promise<{
  endpoint: Endpoint;
  seen: Seen[];
  close(): Promise<void>;
}> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      seen.push(request);
      answer(request, res, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: { url: `http://127.0.0.1:${port}`, token: "t0k", source: "test" },
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(body === undefined ? undefined : JSON.stringify(body));
};

describe("client calls", () => {
  it("build each route's path and query from its operation, send the token and the JSON body", async (t) => {
    const server = await serve((req, res) =>
      json(res, req.method === "DELETE" ? 204 : 200, req.method === "DELETE" ? undefined : { ok: 1 }),
    );
    t.after(() => server.close());
    const client = createSwarmClient(server.endpoint);
    await client.listRuns(5);
    await client.listRuns();
    await client.getRun("r_1");
    await client.deleteRun("r_1", { purge: true });
    await client.deleteRun("r_1");
    await client.stop("a_1", { mode: "drain", drainTimeoutMs: 5_000 });
    await client.pause("a_1");
    await client.result("a_1");
    await client.listPermissions("r_1", "all");
    await client.resolvePermission("a_1", "p_1", { decision: "deny", message: "no" });
    await client.fork("a_1", { prompts: ["left", "right"], keepAlive: false });
    await client.fork("a_1", { count: 2, prompt: "go", spec: { name: "copy" } });
    await client.changes("a_2");
    await client.adopt("a_1", { from: "a_2", onConflict: "theirs" });
    await client.waitFor("r_1", { agentIds: ["a_2", "a_3"], mode: "first", stopOthers: true, timeoutMs: 5_000 });
    assert.deepEqual(
      server.seen.map((r) => [r.method, r.url, r.body]),
      [
        ["GET", "/runs?limit=5", ""],
        ["GET", "/runs", ""],
        ["GET", "/runs/r_1", ""],
        ["DELETE", "/runs/r_1?purge=true", ""],
        ["DELETE", "/runs/r_1", ""],
        ["POST", "/agents/a_1/stop", '{"mode":"drain","drainTimeoutMs":5000}'],
        ["POST", "/agents/a_1/pause", '{"scope":"agent"}'],
        ["GET", "/agents/a_1/result?wait=0", ""],
        ["GET", "/runs/r_1/permissions?state=all", ""],
        ["POST", "/agents/a_1/permissions/p_1", '{"decision":"deny","message":"no"}'],
        ["POST", "/agents/a_1/fork", '{"prompts":["left","right"],"keepAlive":false}'],
        ["POST", "/agents/a_1/fork", '{"count":2,"prompt":"go","spec":{"name":"copy"}}'],
        ["GET", "/agents/a_2/changes", ""],
        ["POST", "/agents/a_1/adopt", '{"from":"a_2","onConflict":"theirs"}'],
        ["POST", "/runs/r_1/wait", '{"agentIds":["a_2","a_3"],"mode":"first","stopOthers":true,"timeoutMs":5000}'],
      ],
    );
    for (const request of server.seen) {
      assert.equal(request.headers.authorization, "Bearer t0k");
      assert.equal(request.headers["content-type"], request.body ? "application/json" : undefined);
    }
  });

  it("give a wait for several agents longer than its timeoutMs (and a cascade's time more with stopOthers), a fork, changes or adopt the time the service gives a copy", () => {
    const wait = (body: Record<string, unknown>) => callTimeoutMs(waitForAgents, { params: { runId: "r_1" }, body });
    assert.equal(wait({ agentIds: ["a_1"], timeoutMs: MAX_WAIT_MANY_MS }), MAX_WAIT_MANY_MS + WAIT_MARGIN_MS);
    assert.equal(wait({ agentIds: ["a_1"] }), DEFAULT_WAIT_MANY_MS + WAIT_MARGIN_MS, "the service's default hold");
    assert.equal(wait({ agentIds: ["a_1"], timeoutMs: 1_000, stopOthers: true }), 1_000 + CASCADE_TIMEOUT_MS);
    for (const route of [forkAgent, getChanges, adoptChanges])
      assert.equal(callTimeoutMs(route, { params: { agentId: "a_1" } }), COPY_TIMEOUT_MS, route.operationId);
    assert.ok(COPY_TIMEOUT_MS > 300_000, "past the service's own 300 s for a fork point or an adopt");
  });

  it("reject with the service's status and message, name an address where nothing listens, time out, and keep a cancel's reason", async (t) => {
    const server = await serve((req, res) => {
      if (req.url === "/agents/a_1/prompt") json(res, 409, { error: "Agent a_1 is not live." });
      // /slow: never answered
    });
    t.after(() => server.close());
    const refused = await createSwarmClient(server.endpoint)
      .prompt("a_1", "hi")
      .catch((err: unknown) => err);
    assert.ok(refused instanceof ServiceError);
    assert.deepEqual(
      [refused.status, refused.message, refused.method, refused.path],
      [409, "Agent a_1 is not live.", "POST", "/agents/a_1/prompt"],
    );

    const url = `http://127.0.0.1:${await freePort()}`;
    const down = await createSwarmClient({ url, source: "SWARM_URL" })
      .getRun("r_1")
      .catch((err: unknown) => err);
    assert.ok(down instanceof ServiceUnreachableError);
    assert.equal(
      down.message,
      `Cannot reach swarmd at ${url} (SWARM_URL): ECONNREFUSED. Start it (\`swarmd\`, \`make run\`, or the swarm_start_service tool) or set SWARM_URL to where it listens.`,
    );
    assert.equal(down.reason, "unreachable");

    const silent = await httpCall(server.endpoint, { method: "GET", path: "/slow", timeoutMs: 1_000 }).catch(
      (err: unknown) => err,
    );
    assert.ok(silent instanceof ServiceUnreachableError);
    assert.deepEqual(
      [silent.reason, silent.message],
      ["timeout", `swarmd at ${server.endpoint.url} (test) did not answer: no answer within 1 s.`],
    );

    const cancel = new AbortController();
    const reason = new Error("the caller went away");
    const cancelled = httpCall(server.endpoint, {
      method: "GET",
      path: "/slow",
      timeoutMs: 30_000,
      signal: cancel.signal,
    });
    setTimeout(() => cancel.abort(reason), 100);
    assert.equal(await cancelled.catch((err: unknown) => err), reason);
  });
});

describe("client event stream", () => {
  it("reads frames split anywhere, CRLF or LF, and resumes after a close with Last-Event-ID set to the last seq", async (t) => {
    const server = await serve((_req, res, n) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (n === 1) {
        const frames =
          ': heartbeat\r\n\r\nid: 1\r\nevent: run_started\r\ndata: {"agentId":null,"runId":"r_1","seq":1,"at":5}\r\n\r\n' +
          'event: text\ndata: {"agentId":"a_1","delta":"hé"}\n\n' +
          'id: 2\nevent: agent_spawned\ndata: {"agentId":"a_1","seq":2,"at":6,\ndata: "specName":"x"}\n\n';
        // Split inside a line, and inside a two-byte character.
        const bytes = Buffer.from(frames);
        const cut = bytes.indexOf("é") + 1;
        res.write(bytes.subarray(0, 20));
        res.write(bytes.subarray(20, cut));
        res.end(bytes.subarray(cut));
      } else res.write('id: 3\nevent: agent_ended\ndata: {"agentId":"a_1","seq":3,"at":7,"outcome":"success"}\n\n');
    });
    t.after(() => server.close());
    const stop = new AbortController();
    const got: SwarmEvent[] = [];
    for await (const event of streamEvents(server.endpoint, "r_1", { signal: stop.signal })) {
      got.push(event);
      if (got.length === 4) stop.abort();
    }
    assert.deepEqual(got, [
      { seq: 1, type: "run_started", agentId: null, at: 5, data: { runId: "r_1" } },
      { seq: null, type: "text", agentId: "a_1", at: null, data: { delta: "hé" } },
      { seq: 2, type: "agent_spawned", agentId: "a_1", at: 6, data: { specName: "x" } },
      { seq: 3, type: "agent_ended", agentId: "a_1", at: 7, data: { outcome: "success" } },
    ]);
    assert.deepEqual(
      server.seen.map((r) => [r.url, r.headers["last-event-id"], r.headers.accept, r.headers.authorization]),
      [
        ["/runs/r_1/events", "0", "text/event-stream", "Bearer t0k"],
        ["/runs/r_1/events", "2", "text/event-stream", "Bearer t0k"],
      ],
    );
  });

  it("refuses a message larger than it holds, without reconnecting", async (t) => {
    const chunk = "x".repeat(1 << 20);
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('id: 1\nevent: run_started\ndata: {"agentId":null}\n\ndata: ');
      // A line that never ends: more than the client holds, sent as fast as it reads.
      let sent = 0;
      const more = () => {
        while (sent <= MAX_MESSAGE_CHARS + chunk.length && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
      };
      res.on("error", () => undefined);
      more();
    });
    t.after(() => server.close());
    const got: SwarmEvent[] = [];
    const failed = await (async () => {
      for await (const event of streamEvents(server.endpoint, "r_1")) got.push(event);
    })().catch((err: unknown) => err);
    assert.ok(failed instanceof EventStreamError, String(failed));
    assert.match(failed.message, /a message over 16777216 characters/);
    assert.deepEqual(
      got.map((e) => e.type),
      ["run_started"],
    );
    assert.equal(server.seen.length, 1, "no reconnect");
  });

  it("throws the service's error (an unknown run) at once", async (t) => {
    const server = await serve((_req, res) => json(res, 404, { error: "Run r_9 does not exist." }));
    t.after(() => server.close());
    const failed = await (async () => {
      for await (const _ of streamEvents(server.endpoint, "r_9")) assert.fail("no event");
    })().catch((err: unknown) => err);
    assert.ok(failed instanceof ServiceError);
    assert.deepEqual([failed.status, failed.message, server.seen.length], [404, "Run r_9 does not exist.", 1]);
  });
});
