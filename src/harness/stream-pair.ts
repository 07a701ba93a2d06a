import { Duplex } from "node:stream";

/** How bytes cross from one end to the other: at once, or later in the order they were written (a freeze gate). */
export type Crossing = (work: () => void) => void;

const atOnce: Crossing = (work) => work();

/**
 * Two connected ends, as the two sides of a socket but in this process: what one end writes the
 * other reads, in order; ending one ends the other's reading (half-close); destroying one ends the
 * other, which then closes once it has read what was already on its way. Writes to an end that is
 * gone are dropped, as a peer that hung up would drop them. `cross` carries every byte and every
 * end over: a freeze gate holds them while shut.
 */
export function streamPair(cross: Crossing = atOnce): [Duplex, Duplex] {
  const a = new PairEnd(cross);
  const b = new PairEnd(cross);
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class PairEnd extends Duplex {
  peer!: PairEnd;
  #eof = false;

  constructor(readonly cross: Crossing) {
    super({ allowHalfOpen: false });
  }

  /** The peer's writes are pushed as they cross: nothing to fetch. */
  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.cross(() => this.peer.receive(chunk));
    done();
  }

  override _final(done: (err?: Error | null) => void): void {
    this.cross(() => this.peer.receiveEnd());
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.cross(() => this.peer.receiveEnd());
    done(err);
  }

  receive(chunk: Buffer): void {
    if (!this.#eof && !this.destroyed) this.push(chunk);
  }

  receiveEnd(): void {
    if (this.#eof || this.destroyed) return;
    this.#eof = true;
    this.push(null);
  }
}
