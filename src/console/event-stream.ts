/**
 * A run's event stream read with fetch, so it can carry the bearer token (the browser's EventSource
 * cannot). eventsource-parser reads the frames; this file adds what EventSource would: reconnecting
 * with `Last-Event-ID` after a dropped connection, so no persisted event is missed, and a clear end
 * when the daemon refuses the stream. DOM-free: the node tests run it against a real daemon.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { StreamMessage } from "./run-state.ts";

export type StreamStatus =
  | { state: "connecting" | "live"; attempt: number }
  | { state: "reconnecting"; attempt: number; error: string }
  /** The daemon refused the stream (a 4xx): retrying would not help. */
  | { state: "refused"; status: number; error: string };

export interface FollowOptions {
  /** The daemon's origin ("" in the page: the same origin). */
  base: string;
  runId: string;
  token: string | null;
  /** The newest persisted seq the caller holds, read at each (re)connect. */
  lastEventId: () => number;
  onMessage: (message: StreamMessage) => void;
  onStatus: (status: StreamStatus) => void;
  signal: AbortSignal;
  /** A connection silent this long is taken as dropped (the daemon sends a heartbeat every 10 s). */
  silenceMs?: number;
  /** Waits between attempts, growing to the last. */
  backoffMs?: readonly number[];
}

const SILENCE_MS = 30_000;
const BACKOFF_MS = [250, 500, 1_000, 2_000, 5_000];

/** Follows the stream until `signal` aborts or the daemon refuses it; never throws. */
export async function followRun(options: FollowOptions): Promise<void> {
  const backoff = options.backoffMs ?? BACKOFF_MS;
  let attempt = 0;
  while (!options.signal.aborted) {
    if (attempt === 0) options.onStatus({ state: "connecting", attempt });
    let error: string;
    try {
      const refused = await readOnce(
        options,
        () => options.onStatus({ state: "live", attempt }),
        // Counted as a good connection once something came through it: a stream that opens and
        // ends at once keeps backing off.
        () => (attempt = 0),
      );
      if (refused) {
        options.onStatus({ state: "refused", ...refused });
        return;
      }
      error = "the daemon closed the stream";
    } catch (err) {
      if (options.signal.aborted) return;
      error = err instanceof Error ? err.message : String(err);
    }
    attempt += 1;
    options.onStatus({ state: "reconnecting", attempt, error });
    await sleep(backoff[Math.min(attempt - 1, backoff.length - 1)] ?? 1_000, options.signal);
  }
}

/** How long the page folds messages before it lets the browser draw (a frame is 16.7 ms). */
const YIELD_AFTER_MS = 8;

/** One connection, read to its end. Resolves with the refusal when the daemon answers 4xx. */
async function readOnce(
  options: FollowOptions,
  onOpen: () => void,
  onFrame: () => void,
): Promise<{ status: number; error: string } | null> {
  const connection = new AbortController();
  const abort = () => connection.abort();
  options.signal.addEventListener("abort", abort, { once: true });
  let silence: ReturnType<typeof setTimeout> | undefined;
  const arm = (why: string) => {
    clearTimeout(silence);
    silence = setTimeout(() => connection.abort(new Error(why)), options.silenceMs ?? SILENCE_MS);
  };
  const listen = () => {
    onFrame();
    arm("no heartbeat: the connection went silent");
  };
  try {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const last = options.lastEventId();
    if (last > 0) headers["last-event-id"] = String(last);
    arm("the daemon did not answer");
    const response = await fetch(`${options.base}/runs/${encodeURIComponent(options.runId)}/events`, {
      headers,
      signal: connection.signal,
    });
    if (response.status >= 400 && response.status < 500)
      return { status: response.status, error: await errorOf(response) };
    if (!response.ok || response.body === null) throw new Error(`the stream answered ${response.status}`);
    onOpen();
    arm("no heartbeat: the connection went silent");
    const events = response.body
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream({ onComment: listen }))
      .getReader();
    let slice = performance.now();
    for (;;) {
      const { done, value } = await events.read();
      if (done) return null;
      // A big chunk of the stream parses into thousands of messages without a macrotask between
      // them: past a slice of the frame, give the browser its turn to draw.
      if (performance.now() - slice > YIELD_AFTER_MS) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        slice = performance.now();
      }
      listen();
      try {
        options.onMessage({ id: value.id, event: value.event ?? "message", data: value.data });
      } catch {
        // One message the page cannot take is skipped; it is no reason to drop the connection.
      }
    }
  } catch (err) {
    // An abort for silence is a dropped connection, told as such.
    throw connection.signal.aborted && connection.signal.reason instanceof Error && !options.signal.aborted
      ? connection.signal.reason
      : err;
  } finally {
    clearTimeout(silence);
    options.signal.removeEventListener("abort", abort);
    connection.abort();
  }
}

/** The daemon's `{"error": message}`, or what little the answer says. */
export async function errorOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string")
      return (body as { error: string }).error;
  } catch {
    // not JSON: fall through
  }
  return `answered ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
