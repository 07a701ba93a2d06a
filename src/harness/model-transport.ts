import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { type Duplex, Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { GATEWAY_HOST } from "./model-file.ts";

/**
 * Where one harness's model calls go: its sandbox's gateway socket, or a connection made in this
 * process (a simulated sandbox's) or on the harness's stream (a cluster sandbox's). `waitMs`: how
 * long a call waits for the socket to accept (default `GATEWAY_WAIT_MS`).
 */
export type ModelRoute = { socketPath: string; waitMs?: number } | { dial: () => Duplex };

/**
 * How long a call waits for its gateway socket to take connections: the daemon serves it, and a
 * daemon restarting (after a crash, under load) may take longer than pi's own retries of a failed
 * call (~14 s), which would fail the turn. Nothing of the call was sent meanwhile, so waiting is safe.
 */
export const GATEWAY_WAIT_MS = 120_000;

/** gateway host → where its calls go. */
const routes = new Map<string, ModelRoute>();
let next = 0;

/**
 * Send the model calls of one harness to its sandbox's gateway; returns the host its model's
 * `baseUrl` must name. pi-ai's provider clients use the global `fetch`, so it is wrapped once per
 * process, at the first route: hosts under `gw.swarmd` go to their route
 * over node:http with no timeouts (a call the gateway holds for a budget or a provider's back-off
 * may wait for hours), every other URL to the fetch there was. Several harnesses may share a process
 * (the simulated runtime's). Not undici's dispatcher: loading the undici package cost a harness's
 * first turn ~50 ms of CPU and ~8 MiB beside the copy of undici node's own fetch loads anyway.
 */
export function routeModelCalls(route: ModelRoute): { host: string; release(): void } {
  if (next === 0) {
    const fetchBefore = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const route = routeOf(input);
      return route ? routedFetch(route, input, init) : fetchBefore(input, init);
    };
  }
  const host = `h${++next}.${GATEWAY_HOST}`;
  routes.set(host, route);
  return { host, release: () => routes.delete(host) };
}

/** The route of a fetch's URL; none for any other URL, or one fetch itself will refuse. */
function routeOf(input: string | URL | Request): ModelRoute | undefined {
  try {
    return routes.get(new URL(input instanceof Request ? input.url : String(input)).hostname);
  } catch {
    return undefined;
  }
}

/**
 * One call to a gateway, answered as fetch answers: a failure before the response as
 * `TypeError("fetch failed")` with its cause, a body cut off as `TypeError("terminated")` (the
 * words pi's retry looks for), an abort as the signal's reason.
 */
async function routedFetch(route: ModelRoute, input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const req = new Request(input, init);
  const { signal } = req;
  signal.throwIfAborted();
  const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
  const url = new URL(req.url);
  const headers: Record<string, string> = {};
  req.headers.forEach((value, name) => {
    headers[name] = value;
  });
  headers.host = url.host;
  if (body) headers["content-length"] = String(body.length);
  const failed = (err: unknown) => (signal.aborted ? signal.reason : new TypeError("fetch failed", { cause: err }));
  const socket =
    "socketPath" in route
      ? await connectGateway(route.socketPath, route.waitMs ?? GATEWAY_WAIT_MS, signal).catch((err: unknown) => {
          throw failed(err);
        })
      : undefined;
  // Aborted while it connected: the listener below would never hear of it.
  if (signal.aborted) {
    socket?.destroy();
    throw signal.reason;
  }
  return new Promise<Response>((resolve, reject) => {
    const call: ClientRequest = httpRequest(
      {
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        // A connection per call (one kept for the next could be closed by the gateway as that call
        // is sent); node takes `createConnection` only from a request without an agent.
        createConnection: () => socket ?? (route as { dial: () => Duplex }).dial(),
      },
      (res) => resolve(toResponse(res, req.method, signal)),
    );
    const onAbort = () => call.destroy(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    call.once("close", () => signal.removeEventListener("abort", onAbort));
    call.once("error", (err) => reject(failed(err)));
    call.end(body);
  });
}

const NO_BODY = new Set([101, 204, 205, 304]);

function toResponse(res: IncomingMessage, method: string, signal: AbortSignal): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 502;
  if (NO_BODY.has(status) || method === "HEAD") {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage, headers });
  }
  // A connection that ends before the body did is an error of the body, as fetch has it.
  const body = new Readable({
    read: () => res.resume(),
    destroy(err, callback) {
      res.destroy();
      callback(err);
    },
  });
  res.on("data", (chunk: Buffer) => {
    if (!body.push(chunk)) res.pause();
  });
  res.once("end", () => body.push(null));
  res.on("error", () => undefined); // told below, once the response closes
  res.once("close", () => {
    if (res.complete) return;
    body.destroy(signal.aborted ? signal.reason : new TypeError("terminated", { cause: res.errored ?? undefined }));
  });
  return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, {
    status,
    statusText: res.statusMessage,
    headers,
  });
}

/**
 * A connection to the gateway socket, tried again while the socket is missing or refuses (its
 * daemon is restarting) until `waitMs` passed; any other error at once.
 */
async function connectGateway(socketPath: string, waitMs: number, signal: AbortSignal): Promise<Socket> {
  const deadline = Date.now() + waitMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const socket = connect(socketPath);
        socket.once("error", reject);
        socket.once("connect", () => {
          socket.off("error", reject);
          resolve(socket);
        });
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== "ECONNREFUSED" && code !== "ENOENT") || Date.now() + pause > deadline) throw err;
      await sleep(pause, undefined, { signal });
    }
  }
}
