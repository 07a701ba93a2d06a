import type { ClientRequest, IncomingMessage } from "node:http";
import { ServiceError } from "./client-errors.ts";
import type { Endpoint } from "./endpoint.ts";
import { errorText, openRequest, parseJson, readBody, toTransportError } from "./http-call.ts";

/** One message of `GET /runs/:runId/events` (spec section 6). */
export interface SwarmEvent {
  /** Ledger seq of a persisted event; `null` for ephemeral ones (text deltas, tool updates, ...). */
  seq: number | null;
  type: string;
  /** `null` for run-level events. */
  agentId: string | null;
  /** Epoch ms the ledger recorded it; `null` on ephemeral events. */
  at: number | null;
  /** The event's own fields (without `agentId`, `seq` and `at`, lifted above). */
  data: Record<string, unknown>;
}

export interface StreamOptions {
  /** Replay persisted events with a seq above this one first (sent as `Last-Event-ID`). Default 0. */
  afterSeq?: number;
  /** Ends the stream: the iteration then simply finishes. */
  signal?: AbortSignal;
}

const CONNECT_TIMEOUT_MS = 30_000;
/** Reconnects in a row without receiving anything before giving up (spec 6.3: nothing is lost). */
const MAX_RECONNECTS = 3;

/**
 * The run's events, replayed after `afterSeq` and then live, for as long as the caller iterates.
 * When the service closes the connection (a slow-consumer cut-off, spec 6.5) it reconnects with
 * `Last-Event-ID` set to the last seq received, so persisted events are neither lost nor repeated.
 * Throws `ServiceError` for an error answer (404: no such run) and `ServiceUnreachableError` when
 * nothing answers; ends quietly when `signal` aborts.
 */
export async function* streamEvents(
  endpoint: Endpoint,
  runId: string,
  options: StreamOptions = {},
): AsyncGenerator<SwarmEvent> {
  let lastSeq = options.afterSeq ?? 0;
  let failures = 0;
  while (!options.signal?.aborted) {
    let connection: { req: ClientRequest; res: IncomingMessage };
    try {
      connection = await connect(endpoint, runId, lastSeq, options.signal);
    } catch (err) {
      if (options.signal?.aborted) return;
      if (err instanceof ServiceError || ++failures > MAX_RECONNECTS) throw err;
      await pause(250 * failures);
      continue;
    }
    const stop = () => connection.req.destroy();
    options.signal?.addEventListener("abort", stop, { once: true });
    let received = false;
    let cause: unknown = new Error("the event stream kept closing");
    try {
      for await (const event of readEvents(connection.res)) {
        received = true;
        failures = 0;
        if (event.seq !== null) lastSeq = event.seq;
        yield event;
      }
    } catch (err) {
      cause = err;
    } finally {
      options.signal?.removeEventListener("abort", stop);
      connection.req.destroy();
    }
    if (options.signal?.aborted) return;
    // A connection that delivered something was healthy; only back-to-back empty ones count.
    if (!received) {
      if (++failures > MAX_RECONNECTS) throw toTransportError(endpoint, cause);
      await pause(250 * failures);
    }
  }
}

function connect(
  endpoint: Endpoint,
  runId: string,
  afterSeq: number,
  signal?: AbortSignal,
): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  const path = `/runs/${encodeURIComponent(runId)}/events`;
  return new Promise((resolve, reject) => {
    const call = {
      method: "GET" as const,
      path,
      headers: { accept: "text/event-stream", "last-event-id": String(afterSeq) },
    };
    const req = openRequest(endpoint, call, (res) => {
      clearTimeout(timer);
      if (res.statusCode === 200) return resolve({ req, res });
      const status = res.statusCode ?? 0;
      readBody(res).then(
        (text) => reject(new ServiceError(status, errorText(status, parseJson(text), text), call)),
        (err: unknown) => reject(toTransportError(endpoint, err, signal)),
      );
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)),
      CONNECT_TIMEOUT_MS,
    );
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(toTransportError(endpoint, err, signal));
    });
    if (signal?.aborted) req.destroy();
    else signal?.addEventListener("abort", () => req.destroy(), { once: true });
    req.end();
  });
}

/** SSE frames (`id:`, `event:`, `data:` lines, blank-line separated; `:` comments are heartbeats). */
async function* readEvents(res: IncomingMessage): AsyncGenerator<SwarmEvent> {
  res.setEncoding("utf8");
  let buffer = "";
  for await (const chunk of res as AsyncIterable<string>) {
    buffer += chunk.replace(/\r\n?/g, "\n");
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const event = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
  }
}

export function parseFrame(frame: string): SwarmEvent | undefined {
  let id: string | undefined;
  let type = "message";
  const data: string[] = [];
  for (const line of frame.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "event") type = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return undefined;
  const parsed = parseJson(data.join("\n"));
  const fields: Record<string, unknown> =
    typeof parsed === "object" && parsed !== null ? { ...(parsed as Record<string, unknown>) } : { value: parsed };
  const agentId = typeof fields.agentId === "string" ? fields.agentId : null;
  const at = typeof fields.at === "number" ? fields.at : null;
  delete fields.agentId;
  delete fields.seq;
  delete fields.at;
  const seq = id !== undefined && /^\d+$/.test(id) ? Number(id) : null;
  return { seq, type, agentId, at: seq === null ? null : at, data: fields };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
