import type { ServerResponse } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import type { EventSource, LedgerEvent, LiveEvent } from "../event-source.ts";
import { ephemeralFrame, HEARTBEAT_FRAME, persistedFrame, SSE_HEADERS } from "./sse-frame.ts";

export interface EventStreamOptions {
  runId: string;
  /** Replay persisted events with `seq > afterSeq` before going live. */
  afterSeq: number;
  events: EventSource;
  /** The hijacked response; this stream owns it from now on. */
  raw: ServerResponse;
  heartbeatMs: number;
  /** Persisted events held back from a client that is not reading before the connection is cut. */
  slowConsumerLimit: number;
  log: FastifyBaseLogger;
}

export type CloseReason = "client" | "slow-consumer" | "shutdown" | "error";

/**
 * One SSE connection of `GET /runs/:runId/events`: replay from the ledger, then live, with no gap
 * and no duplicate at the seam.
 *
 * - Subscribes before replaying; live persisted events wait in `queue` and are written only when
 *   their seq is above the last one written, so the seam is deduplicated by seq.
 * - Backpressure is the socket's own: a `write` that returns false marks the client `blocked`
 *   until `drain`. While blocked (or while persisted events wait), ephemeral events are dropped for
 *   this connection and persisted ones queue; `slowConsumerLimit` queued while blocked closes the
 *   connection. The client reconnects with `Last-Event-ID` and the ledger fills the hole.
 * - If the queue fills during a replay the client is keeping up with, the queue is dropped and the
 *   replay reads the ledger once more from where it got to: the ledger already holds those events.
 */
export class EventStream {
  readonly #o: EventStreamOptions;
  #lastSent: number;
  #queue: LedgerEvent[] = [];
  #live = false;
  #blocked = false;
  #overflowed = false;
  #closed = false;
  #droppedEphemeral = 0;
  #unsubscribe: (() => void) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #drainWaiters: Array<() => void> = [];
  #onClose: Array<(reason: CloseReason) => void> = [];

  constructor(options: EventStreamOptions) {
    this.#o = options;
    this.#lastSent = options.afterSeq;
  }

  onClose(callback: (reason: CloseReason) => void): void {
    this.#onClose.push(callback);
  }

  /** Write the head, replay, then stay live until the client leaves or `close` is called. */
  async start(): Promise<void> {
    const { raw, runId, events } = this.#o;
    raw.on("close", () => this.close("client"));
    raw.on("drain", () => this.#onDrain());
    raw.on("error", () => this.close("client"));
    // A client that left before the handler ran has already fired 'close'; do not subscribe for it.
    if (raw.destroyed || raw.socket === null || raw.socket.destroyed) {
      this.close("client");
      return;
    }
    this.#unsubscribe = events.subscribe(runId, (e) => this.#onLive(e));
    raw.writeHead(200, SSE_HEADERS);
    raw.flushHeaders();
    this.#heartbeat = setInterval(() => {
      // A blocked client has bytes pending already; a heartbeat would only add to the pile.
      if (!this.#blocked) this.#write(HEARTBEAT_FRAME);
    }, this.#o.heartbeatMs);
    try {
      await this.#replay();
    } catch (err) {
      this.#o.log.error({ err, runId }, "event stream replay failed");
      this.close("error");
      return;
    }
    if (this.#closed) return;
    this.#live = true;
    this.#flush();
  }

  /** Idempotent. Unsubscribes, stops the heartbeat and ends or destroys the response. */
  close(reason: CloseReason): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    clearInterval(this.#heartbeat);
    this.#queue = [];
    for (const wake of this.#drainWaiters.splice(0)) wake();
    const { raw } = this.#o;
    if (reason !== "client" && !raw.destroyed) {
      // A client that is not reading would never let `end()` finish: cut it off instead.
      if (this.#blocked || reason === "slow-consumer") raw.destroy();
      else raw.end();
    }
    if (reason === "slow-consumer" || this.#droppedEphemeral > 0) {
      this.#o.log.info({ runId: this.#o.runId, reason, lastSent: this.#lastSent, droppedEphemeral: this.#droppedEphemeral }, "event stream closed");
    }
    for (const callback of this.#onClose.splice(0)) callback(reason);
  }

  async #replay(): Promise<void> {
    do {
      this.#overflowed = false;
      for await (const e of this.#o.events.iterate(this.#o.runId, this.#lastSent)) {
        if (this.#closed) return;
        if (e.seq > this.#lastSent) this.#writePersisted(e);
        if (this.#blocked) await this.#drained();
        if (this.#closed) return;
      }
    } while (this.#overflowed && !this.#closed);
  }

  #onLive(e: LiveEvent): void {
    if (this.#closed) return;
    if (!e.persisted) {
      if (this.#blocked || this.#queue.length > 0) this.#droppedEphemeral++;
      else this.#write(ephemeralFrame(e));
      return;
    }
    if (e.seq <= this.#lastSent) return;
    if (this.#live && !this.#blocked && this.#queue.length === 0) {
      this.#writePersisted(e);
      return;
    }
    this.#queue.push(e);
    if (this.#queue.length < this.#o.slowConsumerLimit) return;
    if (this.#blocked) {
      this.#o.log.warn({ runId: this.#o.runId, lag: this.#queue.length }, "event stream client is not reading; closing");
      this.close("slow-consumer");
      return;
    }
    this.#queue = [];
    this.#overflowed = true;
  }

  #onDrain(): void {
    this.#blocked = false;
    for (const wake of this.#drainWaiters.splice(0)) wake();
    if (this.#live) this.#flush();
  }

  #flush(): void {
    while (this.#queue.length > 0 && !this.#blocked && !this.#closed) {
      const e = this.#queue.shift();
      if (e !== undefined && e.seq > this.#lastSent) this.#writePersisted(e);
    }
  }

  #writePersisted(e: LedgerEvent): void {
    this.#write(persistedFrame(e));
    this.#lastSent = e.seq;
  }

  #write(chunk: string): void {
    if (!this.#o.raw.write(chunk)) this.#blocked = true;
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }
}
