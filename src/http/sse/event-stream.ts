import type { ServerResponse } from "node:http";
import type { SSEMessage, SSEReplyInterface } from "@fastify/sse";
import type { FastifyBaseLogger } from "fastify";
import type { EventSource, LedgerEvent, LiveEvent } from "../event-source.ts";
import { ephemeralMessage, persistedMessage } from "./sse-message.ts";

export interface EventStreamOptions {
  runId: string;
  /** Replay persisted events with `seq > afterSeq` before going live. */
  afterSeq: number;
  events: EventSource;
  /** `reply.sse`: writes the head, every frame and the heartbeat, and ends the response. */
  sse: SSEReplyInterface;
  /**
   * `reply.raw`, the response under `sse`: read for backpressure (`writableNeedDrain`, `drain`),
   * and destroyed to cut off a client that is not reading. Frames never go through it.
   */
  raw: ServerResponse;
  /** Persisted events held back from a client that is not reading before the connection is cut. */
  slowConsumerLimit: number;
  log: FastifyBaseLogger;
  /** Told of each ephemeral event dropped for this client (metrics); must not throw. */
  onEphemeralDropped?: () => void;
}

/**
 * Persisted events read from the ledger at a time during a replay. The ledger's default page is a
 * thousand, held for as long as this client takes to read it: a hundred clients reconnecting to a
 * run of big tool outputs would hold gigabytes.
 */
const REPLAY_PAGE = 64;

/** Why a stream closed; `run-removed`: its run was purged, so there is nothing more to send. */
export type CloseReason = "client" | "slow-consumer" | "shutdown" | "error" | "run-removed";

/**
 * One SSE connection of `GET /runs/:runId/events`: replay from the ledger, then live, with no gap
 * and no duplicate at the seam.
 *
 * - Subscribes before replaying; live persisted events wait in `queue` and are sent only when
 *   their seq is above the last one sent, so the seam is deduplicated by seq.
 * - Backpressure is the socket's own: `@fastify/sse` writes synchronously inside `send()`, so the
 *   response's `writableNeedDrain` right after it says whether the client is blocked, until
 *   `drain`. While blocked (or while persisted events wait), ephemeral events are dropped for this
 *   connection and persisted ones queue; `slowConsumerLimit` queued while blocked closes the
 *   connection. The client reconnects with `Last-Event-ID` and the ledger fills the hole. Nothing
 *   is sent while blocked, so at most one of the plugin's sends ever waits for `drain`.
 * - If the queue fills during a replay the client is keeping up with, the queue is dropped and the
 *   replay reads the ledger once more from where it got to: the ledger already holds those events.
 */
export class EventStream {
  readonly #o: EventStreamOptions;
  #lastSent: number;
  #queue: LedgerEvent[] = [];
  #live = false;
  #overflowed = false;
  #closed = false;
  #droppedEphemeral = 0;
  #unsubscribe: (() => void) | undefined;
  #drainWaiters: Array<() => void> = [];
  #onClose: Array<(reason: CloseReason) => void> = [];

  constructor(options: EventStreamOptions) {
    this.#o = options;
    this.#lastSent = options.afterSeq;
  }

  get runId(): string {
    return this.#o.runId;
  }

  onClose(callback: (reason: CloseReason) => void): void {
    this.#onClose.push(callback);
  }

  /** Send the head, replay, then stay live until the client leaves or `close` is called. */
  async start(): Promise<void> {
    const { sse, raw, runId, events } = this.#o;
    // Without keepAlive the plugin ends the response as soon as the route handler returns.
    sse.keepAlive();
    sse.onClose(() => this.close("client"));
    raw.on("drain", () => this.#onDrain());
    // A client that left before the handler ran has already fired 'close'; do not subscribe for it.
    if (!sse.isConnected || raw.destroyed || raw.socket === null || raw.socket.destroyed) {
      this.close("client");
      return;
    }
    this.#unsubscribe = events.subscribe(runId, (e) => this.#onLive(e));
    // Commits the head and starts the plugin's heartbeat. Node holds a head back until the first
    // body byte, so it is flushed: a client of a quiet run gets its 200 now, not at the heartbeat.
    sse.sendHeaders();
    raw.flushHeaders();
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
    // A client that is not reading would never let the plugin's `end()` finish: cut it off instead.
    const cutOff = reason === "slow-consumer" || (reason !== "client" && this.#blocked);
    this.#closed = true;
    this.#unsubscribe?.();
    this.#queue = [];
    for (const wake of this.#drainWaiters.splice(0)) wake();
    // A cut-off connection is destroyed first: ended cleanly, its socket would look reusable to the
    // client's keep-alive pool, and its next request would die on it.
    if (cutOff) this.#o.raw.destroy();
    this.#o.sse.close();
    if (reason === "slow-consumer" || this.#droppedEphemeral > 0) {
      this.#o.log.info(
        { runId: this.#o.runId, reason, lastSent: this.#lastSent, droppedEphemeral: this.#droppedEphemeral },
        "event stream closed",
      );
    }
    for (const callback of this.#onClose.splice(0)) callback(reason);
  }

  /** Bytes are waiting for the client: set by any write that filled the buffer, heartbeats included. */
  get #blocked(): boolean {
    return this.#o.raw.writableNeedDrain;
  }

  async #replay(): Promise<void> {
    const { events, runId } = this.#o;
    do {
      this.#overflowed = false;
      for await (const e of events.iterate(runId, this.#lastSent, REPLAY_PAGE)) {
        if (this.#closed) return;
        if (e.seq > this.#lastSent) this.#sendPersisted(e);
        if (this.#blocked) await this.#drained();
        if (this.#closed) return;
      }
    } while (this.#overflowed && !this.#closed);
  }

  #onLive(e: LiveEvent): void {
    if (this.#closed) return;
    if (!e.persisted) {
      if (this.#blocked || this.#queue.length > 0) {
        this.#droppedEphemeral++;
        this.#o.onEphemeralDropped?.();
      } else this.#send(ephemeralMessage(e));
      return;
    }
    if (e.seq <= this.#lastSent) return;
    if (this.#live && !this.#blocked && this.#queue.length === 0) {
      this.#sendPersisted(e);
      return;
    }
    this.#queue.push(e);
    if (this.#queue.length < this.#o.slowConsumerLimit) return;
    if (this.#blocked) {
      this.#o.log.warn(
        { runId: this.#o.runId, lag: this.#queue.length },
        "event stream client is not reading; closing",
      );
      this.close("slow-consumer");
      return;
    }
    this.#queue = [];
    this.#overflowed = true;
  }

  #onDrain(): void {
    for (const wake of this.#drainWaiters.splice(0)) wake();
    if (this.#live) this.#flush();
  }

  #flush(): void {
    while (this.#queue.length > 0 && !this.#blocked && !this.#closed) {
      const e = this.#queue.shift();
      if (e !== undefined && e.seq > this.#lastSent) this.#sendPersisted(e);
    }
  }

  #sendPersisted(e: LedgerEvent): void {
    this.#send(persistedMessage(e));
    this.#lastSent = e.seq;
  }

  #send(message: SSEMessage): void {
    // The write happens inside this call; the promise settles later only when it waits for drain,
    // and rejects only for a closed connection, which `#closed` already keeps out.
    this.#o.sse.send(message).catch((err: unknown) => {
      this.#o.log.error({ err, runId: this.#o.runId }, "event stream send failed");
      this.close("error");
    });
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }
}
