import { Duplex, type Readable, type Writable } from "node:stream";
import { readJsonLines } from "../jsonl.ts";
import { createLimitedLog } from "../rate-gate.ts";
import { type ChannelFrame, type ControlFrame, frameLine, MUX_LIMITS, parseFrame } from "./frames.ts";

/** One channel of a mux: a byte stream both ways, as a socket connection is. */
export interface MuxChannel extends Duplex {
  readonly id: number;
  readonly name: string;
}

export interface MuxOptions {
  /** Where the peer's lines come from. */
  input: NodeJS.ReadableStream;
  /** Where this side's lines go. */
  output: NodeJS.WritableStream;
  /** The first id this side gives its channels: 1 (odd ids) on the side that says hello, 2 (even) on the other. */
  firstId: 1 | 2;
  /** Whether channel frames are taken from the start. A side that waits for a hello sets `mux.live` itself. */
  live: boolean;
  /** The peer opened a channel. */
  onOpen(name: string, channel: MuxChannel): void;
  /** A control frame (channel 0), taken whether or not the mux is live. */
  onControl(frame: ControlFrame): void;
  /** Once: the input ended or failed, the output failed, or `destroy` was called; every channel is closed by then. */
  onEnd(error: Error): void;
  /** Protocol errors of a live mux, rate-limited. */
  log(message: string): void;
}

/**
 * Channels multiplexed over one pair of byte streams (see frames.ts). Never throws on what the
 * peer sends: a bad line, a frame for a channel that is gone, data past a channel's window or an
 * open past `MUX_LIMITS.maxChannels` are dropped (the last two close the channel) and logged.
 * Memory stays bounded whatever the peer does: one line of `maxLineBytes`, a window per channel,
 * and reading stops while this side's own output is more than the peer could have asked for
 * (every channel's window and a few lines): a peer that sends without reading is not read either.
 */
export interface Mux {
  /** Whether channel frames are taken; frames before it (a stale attach's) are dropped unread. */
  live: boolean;
  open(name: string): MuxChannel;
  /** Send a control frame. A `hello` is sent on a line of its own, whatever partial line the peer holds. */
  control(frame: { t: string } & Record<string, unknown>): void;
  /** Close every channel here without a word to the peer (it has forgotten them: a new attach). */
  reset(): void;
  /** Stop reading, close every channel, call `onEnd`. Idempotent; the streams themselves are the caller's. */
  destroy(error?: Error): void;
}

/** What this side may have written and the peer not yet read before it stops reading the peer. */
const OUTPUT_CAP = MUX_LIMITS.maxChannels * MUX_LIMITS.window + 4 * MUX_LIMITS.maxLineBytes;

/** How a channel reaches its mux. */
interface Link {
  send(frame: ChannelFrame): void;
  /** Call `done` once the output has room again (at once when it has). */
  afterDrain(done: () => void): void;
  forget(id: number): void;
  log(message: string): void;
}

export function createMux(options: MuxOptions): Mux {
  const input = options.input as Readable;
  const output = options.output as Writable;
  const channels = new Map<number, Channel>();
  const log = createLimitedLog(options.log);
  const drainWaiters: (() => void)[] = [];
  let nextId = options.firstId;
  let congested = false;
  let paused = false;
  let ended = false;

  const onDrain = () => {
    congested = false;
    if (paused) {
      paused = false;
      input.resume();
    }
    for (const done of drainWaiters.splice(0)) done();
  };
  const write = (line: string) => {
    if (ended || output.destroyed || output.writableEnded) return;
    if (!output.write(line) && !congested) {
      congested = true;
      output.once("drain", onDrain);
    }
    if (!paused && (output.writableLength ?? 0) > OUTPUT_CAP) {
      paused = true;
      input.pause();
    }
  };
  const link: Link = {
    send: (frame) => write(frameLine(frame)),
    afterDrain: (done) => (congested ? drainWaiters.push(done) : done()),
    forget: (id) => void channels.delete(id),
    log,
  };
  const peerOwns = (id: number) => id % 2 !== options.firstId % 2;

  const onChannelFrame = (frame: ChannelFrame) => {
    const channel = channels.get(frame.c);
    if (frame.t === "open") {
      if (channel || !peerOwns(frame.c)) return log(`open of channel ${frame.c}, which is not the peer's to open`);
      if (channels.size >= MUX_LIMITS.maxChannels) {
        log(`open of channel ${frame.c} (${frame.n}) refused: ${MUX_LIMITS.maxChannels} channels are open`);
        return link.send({ c: frame.c, t: "close" });
      }
      const opened = new Channel(frame.c, frame.n, link);
      channels.set(frame.c, opened);
      return guard(() => options.onOpen(frame.n, opened));
    }
    // A frame for a channel already gone is what crosses a close: nothing to say.
    if (!channel) return;
    if (frame.t === "data") channel.receiveData(Buffer.from(frame.d, "base64"));
    else if (frame.t === "ack") channel.receiveAck(frame.b);
    else if (frame.t === "end") channel.receiveEnd();
    else channel.receiveClose();
  };

  const guard = (work: () => void) => {
    try {
      work();
    } catch (err) {
      log(`a stream handler failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const stopReading = readJsonLines(input, MUX_LIMITS.maxLineBytes, (item) => {
    if ("tooLong" in item) {
      if (mux.live) log(`dropped a line of ${item.tooLong} bytes (the limit is ${MUX_LIMITS.maxLineBytes})`);
      return;
    }
    if (item.line.length === 0) return;
    const parsed = parseFrame(item.line);
    if ("error" in parsed) {
      if (mux.live) log(`dropped a line: ${parsed.error}`);
      return;
    }
    const { frame } = parsed;
    if (frame.c === 0) guard(() => options.onControl(frame as ControlFrame));
    else if (mux.live) onChannelFrame(frame as ChannelFrame);
  });

  const onInputEnd = () => mux.destroy(new Error("the stream ended"));
  const onError = (err: Error) => mux.destroy(err);
  input.on("end", onInputEnd);
  input.on("close", onInputEnd);
  input.on("error", onError);
  output.on("error", onError);

  const mux: Mux = {
    live: options.live,
    open(name) {
      const id = nextId;
      nextId += 2;
      const channel = new Channel(id, name, link);
      if (ended) {
        channel.destroy();
        return channel;
      }
      channels.set(id, channel);
      link.send({ c: id, t: "open", n: name });
      return channel;
    },
    control(frame) {
      write(`${frame.t === "hello" ? "\n" : ""}${frameLine({ ...frame, c: 0 })}`);
    },
    reset() {
      const open = [...channels.values()];
      channels.clear();
      for (const channel of open) channel.forgotten();
    },
    destroy(error = new Error("the stream was closed")) {
      if (ended) return;
      mux.reset();
      ended = true;
      stopReading();
      input.off("end", onInputEnd);
      input.off("close", onInputEnd);
      input.off("error", onError);
      output.off("error", onError);
      output.off("drain", onDrain);
      for (const done of drainWaiters.splice(0)) done();
      guard(() => options.onEnd(error));
    },
  };
  return mux;
}

/** Bytes unread by this side's reader are acknowledged in steps of a quarter window. */
const ACK_STEP = MUX_LIMITS.window / 4;

class Channel extends Duplex implements MuxChannel {
  #credit: number = MUX_LIMITS.window;
  #received = 0;
  #acked = 0;
  #sentEnd = false;
  #gotEnd = false;
  /** The peer has forgotten the channel: it closed it, or a new attach replaced the one it was opened on. */
  #gone = false;
  #pending: { data: Buffer; done: (err?: Error | null) => void } | undefined;

  constructor(
    readonly id: number,
    readonly name: string,
    private readonly link: Link,
  ) {
    super({ allowHalfOpen: false, readableHighWaterMark: MUX_LIMITS.window });
  }

  override _read(): void {}

  /** Every read goes through here (flowing mode too): what the reader took frees window for the peer. */
  override read(size?: number): unknown {
    const chunk = super.read(size) as unknown;
    this.#ack();
    return chunk;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.#pending = { data: chunk, done };
    this.#pump();
  }

  override _final(done: (err?: Error | null) => void): void {
    if (!this.#gone) this.link.send({ c: this.id, t: "end" });
    this.#sentEnd = true;
    if (this.#gotEnd) this.link.forget(this.id);
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    if (!this.#gone && !(this.#sentEnd && this.#gotEnd)) this.link.send({ c: this.id, t: "close" });
    this.#gone = true;
    this.#pending = undefined;
    this.link.forget(this.id);
    done(err);
  }

  receiveData(data: Buffer): void {
    if (this.#gotEnd || this.destroyed) return;
    this.#received += data.length;
    if (this.#received - this.#acked > MUX_LIMITS.window) {
      this.link.log(`channel ${this.id} (${this.name}) closed: the peer sent past its window`);
      this.destroy();
      return;
    }
    this.push(data);
    this.#ack();
  }

  receiveAck(bytes: number): void {
    this.#credit = Math.min(MUX_LIMITS.window, this.#credit + bytes);
    this.#pump();
  }

  receiveEnd(): void {
    if (this.#gotEnd) return;
    this.#gotEnd = true;
    if (this.#sentEnd) this.link.forget(this.id);
    this.push(null);
  }

  receiveClose(): void {
    this.#gone = true;
    this.destroy();
  }

  forgotten(): void {
    this.#gone = true;
    this.destroy();
  }

  #ack(): void {
    if (this.#gone || this.#gotEnd) return;
    const due = this.#received - this.readableLength - this.#acked;
    if (due < ACK_STEP) return;
    this.#acked += due;
    this.link.send({ c: this.id, t: "ack", b: due });
  }

  /** Send what the window allows of the pending write; its callback waits for the rest and for the output's room. */
  #pump(): void {
    const pending = this.#pending;
    if (!pending || this.#gone) return;
    while (pending.data.length > 0 && this.#credit > 0) {
      const n = Math.min(pending.data.length, MUX_LIMITS.chunkBytes, this.#credit);
      this.link.send({ c: this.id, t: "data", d: pending.data.subarray(0, n).toString("base64") });
      pending.data = pending.data.subarray(n);
      this.#credit -= n;
    }
    if (pending.data.length > 0) return;
    this.#pending = undefined;
    this.link.afterDrain(() => pending.done());
  }
}

/**
 * Join two streams both ways, as a proxy joins two connections: each one's bytes go to the other,
 * an end is passed on, and one that closes without ending (aborted) takes the other down with it.
 */
export function relay(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const follow = (from: Duplex, to: Duplex) => () => {
    if (!from.readableEnded || from.errored) to.destroy();
  };
  a.once("close", follow(a, b));
  b.once("close", follow(b, a));
  a.on("error", () => a.destroy());
  b.on("error", () => b.destroy());
}
