import { type IncomingMessage, request } from "node:http";
import { readFrames, type SseFrame } from "../support/sse-client.ts";
import { createWaitList } from "../support/wait-list.ts";

/**
 * A minimal SSE reader over node:http (no EventSource: the tests need to see raw frames,
 * comments included, and to stop reading on purpose).
 */
export class SseClient {
  readonly frames: SseFrame[] = [];
  readonly response: Promise<IncomingMessage>;
  /** Resolves when the server ends or drops the connection. */
  readonly ended: Promise<void>;
  readonly #waits = createWaitList();
  #res: IncomingMessage | undefined;
  #req;

  /** `headers` override the default `accept: text/event-stream`; a `null` value sends no such header. */
  constructor(url: string, headers: Record<string, string | null> = {}) {
    let markEnded: () => void = () => {};
    this.ended = new Promise((resolve) => (markEnded = resolve));
    const sent = Object.entries({ accept: "text/event-stream", ...headers }).filter(
      (h): h is [string, string] => h[1] !== null,
    );
    this.#req = request(url, { headers: Object.fromEntries(sent) });
    this.response = new Promise((resolve, reject) => {
      this.#req.on("response", (res) => {
        this.#res = res;
        readFrames(res, (frame) => {
          this.frames.push(frame);
          this.#waits.wake();
        });
        res.on("close", markEnded);
        resolve(res);
      });
      this.#req.on("error", (err) => {
        markEnded();
        reject(err);
      });
    });
    this.#req.end();
  }

  get ids(): number[] {
    return this.frames.flatMap((f) => (f.id === undefined ? [] : [f.id]));
  }

  /** Resolves once a frame satisfies `predicate` (already received ones count). */
  until(predicate: (f: SseFrame) => boolean, timeoutMs = 5_000): Promise<SseFrame> {
    return this.#waits.until(
      () => this.frames.find(predicate),
      timeoutMs,
      () => `no matching frame in ${timeoutMs} ms; got ${JSON.stringify(this.frames.slice(-5))}`,
    );
  }

  /** Stop reading: the socket's receive buffer fills and the server sees backpressure. */
  pause(): void {
    this.#res?.pause();
  }

  resume(): void {
    this.#res?.resume();
  }

  close(): void {
    this.#req.destroy();
  }
}
