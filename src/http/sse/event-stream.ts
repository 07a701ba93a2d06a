import type { ServerResponse } from "node:http";
import type { SSEReplyInterface } from "@fastify/sse";
import type { FastifyBaseLogger } from "fastify";
import type { EventSource, LedgerEvent, LiveEvent } from "../event-source.ts";
import { ephemeralFrame, persistedFrame, storedFrame } from "./sse-frame.ts";

export interface EventStreamOptions {
  runId: string;
  /** Replay persisted events with `seq > afterSeq` before going live. */
  afterSeq: number;
  events: EventSource;
  /** `reply.sse`: writes the head and the heartbeat, reads `Last-Event-ID`, ends the response. */
  sse: SSEReplyInterface;
  /**
   * `reply.raw`, the response under `sse`: frames are written to it, its backpressure read
   * (`writableNeedDrain`, `drain`), and it is destroyed to cut off a client that is not reading.
   */
  raw: ServerResponse;
  /** Persisted events held back from a client that is not reading before the connection is cut. */
  slowConsumerLimit: number;
  log: FastifyBaseLogger;
  /** Told of each ephemeral event dropped for this client (metrics); must not throw. */
  onEphemeralDropped?: () => void;
}

/**
 * What a replay reads from the ledger at a time, and holds for as long as this client takes to
 * read it: bounded in bytes, since a hundred clients reconnecting to a run of big tool outputs
 * would hold gigabytes in pages of a thousand; large enough that small events take few trips to
 * the storage thread.
 */
const REPLAY_PAGE = 1000;
const REPLAY_PAGE_BYTES = 256 * 1024;

/** Why a stream closed; `run-removed`: its run was purged, so there is nothing more to send. */
export type CloseReason = "client" | "slow-consumer" | "shutdown" | "error" | "run-removed";

/**
 * One SSE connection of `GET /runs/:runId/events`: replay from the ledger, then live, with no gap
 * and no duplicate at the seam.
 *
 * - Subscribes before replaying; live persisted events wait in `queue` and are sent only when
 *   their seq is above the last one sent, so the seam is deduplicated by seq.
 * - Frames sent in one tick (a committed batch, a replayed page) go out as one write at its end
 *   (`#out`): a socket write per frame cost more than the frames themselves.
 * - Backpressure is the socket's own, counting the frames of `#out` as written: the client is
 *   blocked once they would fill the response's buffer or a write has filled it, until `drain`.
 *   While blocked (or while persisted events wait), ephemeral events are dropped for this
 *   connection and persisted ones queue; `slowConsumerLimit` queued while the socket is full from
 *   an earlier write closes the connection: a client that reads is never cut for the size of one
 *   commit, one that does not is cut at the next event after it. The client reconnects with `Last-Event-ID` and the ledger fills the hole.
 * - The replay sends the ledger's stored text as frames without parsing it (`storedFrame`), a page
 *   at a time, and waits for `drain` whenever the client is blocked.
 * - If the queue fills during a replay the client is keeping up with, the queue is dropped: the
 *   replay reads on until it has the run's last seq, and the ledger already holds those events.
 */
export class EventStream {
  readonly #o: EventStreamOptions;
  #lastSent: number;
  #queue: LedgerEvent[] = [];
  #live = false;
  #closed = false;
  #droppedEphemeral = 0;
  #unsubscribe: (() => void) | undefined;
  #drainWaiters: Array<() => void> = [];
  #onClose: Array<(reason: CloseReason) => void> = [];
  /** Frames sent in this tick, not yet written, and their length (characters, near enough to bytes). */
  #out: string[] = [];
  #outLength = 0;

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
    // Frames sent before the close still go out, unless there is no one left to read them.
    if (reason === "client" || reason === "slow-consumer") {
      this.#out = [];
      this.#outLength = 0;
    } else this.#writeOut();
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

  /**
   * Bytes are waiting for the client: set by any write that filled the buffer, heartbeats included,
   * or by frames of this tick that will fill it when written.
   */
  get #blocked(): boolean {
    const raw = this.#o.raw;
    return (
      raw.writableNeedDrain ||
      (this.#outLength > 0 && raw.writableLength + this.#outLength >= raw.writableHighWaterMark)
    );
  }

  /** Ends once it sent the run's `lastSeq`, in the tick the stream goes live: nothing falls between. */
  async #replay(): Promise<void> {
    const { events, runId } = this.#o;
    while (this.#lastSent < events.lastSeq(runId)) {
      const page = await events.readStored(runId, this.#lastSent, REPLAY_PAGE, REPLAY_PAGE_BYTES);
      if (this.#closed || page.length === 0) return;
      for (const json of page) {
        const { seq, frame } = storedFrame(json);
        if (seq <= this.#lastSent) continue;
        this.#send(frame);
        this.#lastSent = seq;
        if (this.#blocked) {
          this.#writeOut();
          if (this.#o.raw.writableNeedDrain) await this.#drained();
          if (this.#closed) return;
        }
      }
    }
  }

  #onLive(e: LiveEvent): void {
    if (this.#closed) return;
    if (!e.persisted) {
      if (this.#blocked || this.#queue.length > 0) {
        this.#droppedEphemeral++;
        this.#o.onEphemeralDropped?.();
      } else this.#send(ephemeralFrame(e));
      return;
    }
    if (e.seq <= this.#lastSent) return;
    if (this.#live && !this.#blocked && this.#queue.length === 0) {
      this.#sendPersisted(e);
      return;
    }
    this.#queue.push(e);
    if (this.#queue.length < this.#o.slowConsumerLimit) return;
    // Not reading is shown by the socket staying full from an earlier write. Frames of this tick
    // that would fill it prove nothing: one commit of thousands of events (a subtree stop of a big
    // run) queues them for a client that is reading, and they go out at its next drain.
    if (this.#o.raw.writableNeedDrain) {
      this.#o.log.warn(
        { runId: this.#o.runId, lag: this.#queue.length },
        "event stream client is not reading; closing",
      );
      this.close("slow-consumer");
      return;
    }
    if (!this.#live) this.#queue = [];
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
    this.#send(persistedFrame(e));
    this.#lastSent = e.seq;
  }

  /** Sent: written with the rest of this tick's frames, in order. */
  #send(frame: string): void {
    if (this.#out.length === 0) process.nextTick(this.#writeOut);
    this.#out.push(frame);
    this.#outLength += frame.length;
  }

  /** Write the frames sent so far as one chunk; the response holds them if the socket is full. */
  readonly #writeOut = (): void => {
    const out = this.#out;
    if (out.length === 0) return;
    this.#out = [];
    this.#outLength = 0;
    if (this.#closed || this.#o.raw.destroyed) return;
    this.#o.raw.write(out.length === 1 ? (out[0] as string) : out.join(""));
  };

  #drained(): Promise<void> {
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }
}
