import { request, type IncomingMessage } from "node:http";

export interface SseFrame {
  id?: number;
  event?: string;
  data?: Record<string, unknown>;
  comment?: string;
}

/**
 * A minimal SSE reader over node:http (no EventSource: the tests need to see raw frames,
 * comments included, and to stop reading on purpose).
 */
export class SseClient {
  readonly frames: SseFrame[] = [];
  readonly response: Promise<IncomingMessage>;
  /** Resolves when the server ends or drops the connection. */
  readonly ended: Promise<void>;
  #buffer = "";
  #waiters: Array<() => void> = [];
  #res: IncomingMessage | undefined;
  #req;

  /** `headers` override the default `accept: text/event-stream`; a `null` value sends no such header. */
  constructor(url: string, headers: Record<string, string | null> = {}) {
    let markEnded: () => void = () => {};
    this.ended = new Promise((resolve) => (markEnded = resolve));
    const sent = Object.entries({ accept: "text/event-stream", ...headers }).filter((h): h is [string, string] => h[1] !== null);
    this.#req = request(url, { headers: Object.fromEntries(sent) });
    this.response = new Promise((resolve, reject) => {
      this.#req.on("response", (res) => {
        this.#res = res;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => this.#push(chunk));
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
  async until(predicate: (f: SseFrame) => boolean, timeoutMs = 5_000): Promise<SseFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(this.frames.slice(-5))}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
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

  #push(chunk: string): void {
    this.#buffer += chunk;
    let end: number;
    // Only complete frames count: a connection cut mid-frame must not yield half an event.
    while ((end = this.#buffer.indexOf("\n\n")) !== -1) {
      const block = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      this.frames.push(parseFrame(block));
    }
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    else if (line.startsWith("id: ")) frame.id = Number(line.slice(4));
    else if (line.startsWith("event: ")) frame.event = line.slice(7);
    else if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6)) as Record<string, unknown>;
  }
  return frame;
}
