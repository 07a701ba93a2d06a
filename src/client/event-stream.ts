import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";
import type { Dispatcher } from "undici";
import { EventStreamError, ServiceError } from "./client-errors.ts";
import type { Endpoint } from "./endpoint.ts";
import { errorText, openRequest, parseJson, TimeoutError, toTransportError } from "./http-call.ts";

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
 * The most characters of one message the parser holds (its unfinished line and data). The daemon's
 * largest message is an event's data (256 KiB for a harness event; a spawn's spec up to the body
 * limit) with a few fields: far below this. A server sending more is refused, not buffered.
 */
export const MAX_MESSAGE_CHARS = 16 * 1024 * 1024;

/**
 * The run's events, replayed after `afterSeq` and then live, for as long as the caller iterates.
 * When the service closes the connection (a slow-consumer cut-off, spec 6.5) it reconnects with
 * `Last-Event-ID` set to the last seq received, so persisted events are neither lost nor repeated.
 * Throws `ServiceError` for an error answer (404: no such run), `ServiceUnreachableError` when
 * nothing answers and `EventStreamError` for a message over `MAX_MESSAGE_CHARS`; ends quietly when
 * `signal` aborts.
 */
export async function* streamEvents(
  endpoint: Endpoint,
  runId: string,
  options: StreamOptions = {},
): AsyncGenerator<SwarmEvent> {
  let lastSeq = options.afterSeq ?? 0;
  let failures = 0;
  while (!options.signal?.aborted) {
    // One connection's own cancel: the caller's signal, or its end below.
    const connection = new AbortController();
    const stop = () => connection.abort();
    options.signal?.addEventListener("abort", stop, { once: true });
    let received = false;
    let cause: unknown = new Error("the event stream kept closing");
    try {
      const body = await connect(endpoint, runId, lastSeq, connection.signal);
      for await (const event of readEvents(body)) {
        received = true;
        failures = 0;
        if (event.seq !== null) lastSeq = event.seq;
        yield event;
      }
    } catch (err) {
      if (options.signal?.aborted) return;
      if (err instanceof ServiceError || err instanceof EventStreamError) throw err;
      cause = err;
    } finally {
      options.signal?.removeEventListener("abort", stop);
      connection.abort();
    }
    if (options.signal?.aborted) return;
    // A connection that delivered something was healthy; only back-to-back empty ones count.
    if (!received) {
      if (++failures > MAX_RECONNECTS) throw toTransportError(endpoint, cause);
      await pause(250 * failures);
    }
  }
}

/** Opens the stream after `afterSeq`: its body once the service answered 200. */
async function connect(
  endpoint: Endpoint,
  runId: string,
  afterSeq: number,
  signal: AbortSignal,
): Promise<Dispatcher.ResponseData["body"]> {
  const call = {
    method: "GET" as const,
    path: `/runs/${encodeURIComponent(runId)}/events`,
    headers: { accept: "text/event-stream", "last-event-id": String(afterSeq) },
  };
  const answered = new AbortController();
  const timer = setTimeout(() => answered.abort(new TimeoutError(CONNECT_TIMEOUT_MS)), CONNECT_TIMEOUT_MS);
  try {
    const response = await openRequest(endpoint, { ...call, signal: AbortSignal.any([signal, answered.signal]) });
    if (response.statusCode === 200) return response.body;
    const text = await response.body.text();
    throw new ServiceError(response.statusCode, errorText(response.statusCode, parseJson(text), text), call);
  } catch (err) {
    throw answered.signal.aborted ? answered.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}

/** The messages of one connection, parsed by eventsource-parser, at most `MAX_MESSAGE_CHARS` held at a time. */
async function* readEvents(body: AsyncIterable<Buffer>): AsyncGenerator<SwarmEvent> {
  const decoder = new TextDecoder();
  const parsed: SwarmEvent[] = [];
  let refused: ParseError | undefined;
  const parser = createParser({
    maxBufferSize: MAX_MESSAGE_CHARS,
    onEvent: (message) => {
      const event = toSwarmEvent(message);
      if (event) parsed.push(event);
    },
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") refused = error;
    },
  });
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (refused)
      throw new EventStreamError(
        `the event stream sent a message over ${MAX_MESSAGE_CHARS} characters; it was not read`,
        { cause: refused },
      );
    yield* parsed.splice(0);
  }
}

/** One SSE frame's text (`id:`, `event:`, `data:` lines; `:` comments are heartbeats) as an event, or undefined without data. */
export function parseFrame(frame: string): SwarmEvent | undefined {
  let event: SwarmEvent | undefined;
  createParser({ onEvent: (message) => (event ??= toSwarmEvent(message)) }).feed(`${frame}\n\n`);
  return event;
}

/** A message as the client's callers read it: `agentId`, `seq` and `at` lifted out of `data`. */
function toSwarmEvent(message: EventSourceMessage): SwarmEvent | undefined {
  const parsed = parseJson(message.data);
  const fields: Record<string, unknown> =
    typeof parsed === "object" && parsed !== null ? { ...(parsed as Record<string, unknown>) } : { value: parsed };
  const agentId = typeof fields.agentId === "string" ? fields.agentId : null;
  const at = typeof fields.at === "number" ? fields.at : null;
  delete fields.agentId;
  delete fields.seq;
  delete fields.at;
  const id = message.id;
  const seq = id !== undefined && /^\d+$/.test(id) ? Number(id) : null;
  return { seq, type: message.event ?? "message", agentId, at: seq === null ? null : at, data: fields };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
