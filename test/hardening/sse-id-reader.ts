import { type ClientRequest, type IncomingMessage, request } from "node:http";

/**
 * A lean SSE client for volume tests: it keeps only the `id`s it received, so a hundred of them
 * reading megabytes each cost the test process almost nothing (the daemon shares the process,
 * and its memory is what is measured).
 */
export class IdReader {
  /** Every `id` received, in order, over this one connection. */
  readonly ids: number[] = [];
  status = 0;
  /** The server ended or cut the connection, or it failed (also after `destroy`). */
  ended = false;
  readonly #request: ClientRequest;
  #response: IncomingMessage | undefined;
  #tail = "";
  #waiters: Array<{ seq: number; resolve: () => void; reject: (err: Error) => void }> = [];
  readonly #endWaiters: Array<() => void> = [];

  /** Connects at once; `lastEventId` is sent as the `Last-Event-ID` header. */
  constructor(base: string, runId: string, lastEventId?: number) {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
    this.#request = request(`${base}/runs/${runId}/events`, { headers, agent: false });
    this.#request.on("response", (res) => {
      this.#response = res;
      this.status = res.statusCode ?? 0;
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => this.#read(chunk));
      res.on("close", () => this.#end());
      res.on("error", () => this.#end());
    });
    this.#request.on("error", () => this.#end());
    this.#request.end();
  }

  get lastId(): number | undefined {
    return this.ids.at(-1);
  }

  /** Stop reading: the server's writes back up into the socket buffers. */
  pause(): void {
    this.#response?.pause();
  }

  resume(): void {
    this.#response?.resume();
  }

  /** Drop the connection mid-stream, as a client that crashed or navigated away. */
  destroy(): void {
    this.#request.destroy();
    this.#end();
  }

  /** Resolves once an id >= `seq` arrived; rejects if the connection ends first or `timeoutMs` passes. */
  waitForId(seq: number, timeoutMs = 60_000): Promise<void> {
    if ((this.lastId ?? 0) >= seq) return Promise.resolve();
    if (this.ended) return Promise.reject(new Error(`stream ended at id ${this.lastId} before ${seq}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no id ${seq} within ${timeoutMs} ms (at ${this.lastId})`)),
        timeoutMs,
      );
      this.#waiters.push({
        seq,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
    });
  }

  /** Resolves when the connection has ended (at once if it already has). */
  untilEnded(): Promise<void> {
    return this.ended ? Promise.resolve() : new Promise((resolve) => this.#endWaiters.push(resolve));
  }

  #read(chunk: string): void {
    const text = this.#tail + chunk;
    let start = 0;
    for (let end = text.indexOf("\n\n", start); end >= 0; end = text.indexOf("\n\n", start)) {
      // Frames are `id: N\nevent: …\ndata: …`; ephemeral ones and heartbeats have no id line.
      if (text.startsWith("id:", start)) this.ids.push(Number(text.slice(start + 3, text.indexOf("\n", start))));
      start = end + 2;
    }
    this.#tail = text.slice(start);
    const last = this.lastId ?? 0;
    if (this.#waiters.length === 0) return;
    const reached = this.#waiters.filter((w) => w.seq <= last);
    this.#waiters = this.#waiters.filter((w) => w.seq > last);
    for (const w of reached) w.resolve();
  }

  #end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const w of this.#waiters.splice(0)) w.reject(new Error(`stream ended at id ${this.lastId} before ${w.seq}`));
    for (const wake of this.#endWaiters.splice(0)) wake();
  }
}
