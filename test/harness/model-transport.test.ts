import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { GATEWAY_WAIT_MS, routeModelCalls } from "../../src/harness/model-transport.ts";

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/**
 * A harness's model calls as pi-ai's clients make them: the global `fetch` to the gateway host its
 * model names, carried to the sandbox's gateway socket. What pi reads of an answer (its status, its
 * headers, its body as it streams) and of a failure (the words its retry looks for) is fetch's.
 */
describe("harness model transport: fetch to a gateway socket", () => {
  let dir: string;
  let server: Server;
  let socketPath: string;
  let handle: Handler = () => undefined;
  const closed: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "swarmd-transport-"));
    socketPath = join(dir, "model.sock");
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => handle(req, body, res));
      res.on("close", () => closed.push(req.url ?? ""));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const route = () => routeModelCalls({ socketPath });

  it("sends the call's method, path, headers and body, and streams the answer back as it comes", async () => {
    const { host, release } = route();
    let seen: { method?: string; url?: string; host?: string; auth?: string; body?: string } = {};
    let second: () => void = () => undefined;
    handle = (req, body, res) => {
      seen = { method: req.method, url: req.url, host: req.headers.host, auth: req.headers.authorization, body };
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "r1" });
      res.write("data: one\n\n");
      second = () => res.end("data: two\n\n");
    };
    const answer = await fetch(`http://${host}/v1/messages?beta=true`, {
      method: "POST",
      headers: { authorization: "Bearer placeholder", "content-type": "application/json" },
      body: JSON.stringify({ model: "m" }),
    });
    assert.deepEqual(seen, {
      method: "POST",
      url: "/v1/messages?beta=true",
      host,
      auth: "Bearer placeholder",
      body: '{"model":"m"}',
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("x-request-id"), "r1");
    const reader = answer.body!.getReader();
    const decoder = new TextDecoder();
    // The first event arrives while the gateway still holds the rest: nothing waits for the end.
    assert.equal(decoder.decode((await reader.read()).value), "data: one\n\n");
    second();
    assert.equal(decoder.decode((await reader.read()).value), "data: two\n\n");
    assert.equal((await reader.read()).done, true);
    release();
  });

  it("answers an error status with its body, as fetch does", async () => {
    const { host, release } = route();
    handle = (_req, _body, res) => {
      res.writeHead(429, { "retry-after": "1" });
      res.end('{"error":"slow down"}');
    };
    const answer = await fetch(`http://${host}/v1/chat/completions`, { method: "POST", body: "{}" });
    assert.equal(answer.status, 429);
    assert.equal(answer.headers.get("retry-after"), "1");
    assert.deepEqual(await answer.json(), { error: "slow down" });
    release();
  });

  it("fails an answer cut off mid-body with 'terminated', and a socket nobody serves with 'fetch failed' (what pi's retry looks for)", async () => {
    const { host, release } = route();
    handle = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: partial\n\n");
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const answer = await fetch(`http://${host}/v1/messages`, { method: "POST", body: "{}" });
    await assert.rejects(answer.text(), (err: Error) => err instanceof TypeError && err.message === "terminated");
    release();

    const nobody = routeModelCalls({ socketPath: join(dir, "nobody.sock"), waitMs: 300 });
    await assert.rejects(
      fetch(`http://${nobody.host}/v1/messages`, { method: "POST", body: "{}" }),
      (err: Error) => err instanceof TypeError && err.message === "fetch failed",
    );
    nobody.release();
  });

  it("waits for a gateway socket that is not served yet (its daemon restarting), and gives up on an abort", async () => {
    const later = join(dir, "later.sock");
    const { host, release } = routeModelCalls({ socketPath: later });
    const answer = fetch(`http://${host}/v1/messages`, { method: "POST", body: "{}" });
    await new Promise((r) => setTimeout(r, 500));
    const server2 = createServer((_req, res) => res.end("served after the restart"));
    await new Promise<void>((resolve) => server2.listen(later, resolve));
    try {
      assert.equal(await (await answer).text(), "served after the restart");
    } finally {
      server2.closeAllConnections();
      await new Promise((resolve) => server2.close(resolve));
    }
    const abort = new AbortController();
    const waiting = fetch(`http://${host}/v1/messages`, { method: "POST", body: "{}", signal: abort.signal });
    setTimeout(() => abort.abort(new Error("turn aborted while waiting")), 300);
    await assert.rejects(waiting, /turn aborted while waiting/);
    release();
  });

  it("ends the call's connection when its signal aborts, before or during the answer", async () => {
    const { host, release } = route();
    handle = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: held\n\n"); // and never ends
    };
    const abort = new AbortController();
    const answer = await fetch(`http://${host}/held`, { method: "POST", body: "{}", signal: abort.signal });
    const reader = answer.body!.getReader();
    await reader.read();
    abort.abort(new Error("turn aborted"));
    await assert.rejects(reader.read(), /turn aborted/);
    await waitFor(() => closed.includes("/held"));

    const early = new AbortController();
    early.abort(new Error("aborted before"));
    await assert.rejects(fetch(`http://${host}/early`, { method: "POST", signal: early.signal }), /aborted before/);
    release();
  });

  it("closes the gateway connection and sends nothing when the abort lands while it is being made", async () => {
    const { host, release } = route();
    const requests: string[] = [];
    handle = (req, _body, res) => {
      requests.push(req.url ?? "");
      res.end("should not be asked");
    };
    const serverSide: Promise<void>[] = [];
    const onConnection = (socket: Socket) =>
      serverSide.push(new Promise((resolve) => socket.once("close", () => resolve())));
    server.on("connection", onConnection);
    // The call's socket is made by net.connect: abort as it connects, before the request is written.
    const abort = new AbortController();
    const onSocket = ({ socket }: { socket: Socket }) =>
      socket.once("connect", () => abort.abort(new Error("aborted as it connected")));
    subscribe("net.client.socket", onSocket as (message: unknown) => void);
    try {
      await assert.rejects(
        fetch(`http://${host}/during`, { method: "POST", body: "{}", signal: abort.signal }),
        /aborted as it connected/,
      );
    } finally {
      unsubscribe("net.client.socket", onSocket as (message: unknown) => void);
      server.off("connection", onConnection);
    }
    await waitFor(() => serverSide.length === 1);
    await serverSide[0];
    assert.deepEqual(requests, [], "no request reached the gateway");
    release();
  });

  it("waits as long as the docs say: spec §3 rule 8, the design page and the guarantees state GATEWAY_WAIT_MS", () => {
    const stated = `up to ${GATEWAY_WAIT_MS / 60_000} minutes`;
    for (const page of ["docs/spec.md", "docs/design.md", "docs/guarantees.md"])
      assert.ok(readFileSync(join(SWARMD_ROOT, page), "utf8").includes(stated), `${page} says "${stated}"`);
  });

  it("leaves every other URL to the fetch there was", async () => {
    const { host, release } = route();
    handle = (_req, _body, res) => res.end("routed");
    const plain = createServer((_req, res) => res.end("plain"));
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    const { port } = plain.address() as AddressInfo;
    try {
      assert.equal(await (await fetch(`http://${host}/x`)).text(), "routed");
      assert.equal(await (await fetch(`http://127.0.0.1:${port}/x`)).text(), "plain");
      // A URL fetch refuses is refused as fetch refuses it: a rejection, not a throw.
      const refused = fetch("not a url");
      await assert.rejects(refused, TypeError);
    } finally {
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
      release();
    }
  });
});

async function waitFor(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(done(), "timed out");
}
