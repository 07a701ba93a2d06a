import type { NodeInfo } from "../sandbox/runtime.ts";

/** Where the node gauges read the runtime's nodes (`SandboxRuntime.nodes`). */
export type NodeSource = (signal: AbortSignal) => Promise<NodeInfo[]>;

export interface NodeSamplerOptions {
  /** An answer younger than this is served as it is, without asking again. Default 5 s. */
  freshMs?: number;
  /** How long a scrape waits for a new answer before it serves the last one (or none). Default 2 s. */
  waitMs?: number;
  /** An answer older than this is not served at all: the gauges are absent instead. Default 60 s. */
  staleMs?: number;
  /** How long one call of the source may take before it is aborted. Default 30 s. */
  callTimeoutMs?: number;
  now?: () => number;
}

/**
 * The runtime's nodes as the scrape-time gauges read them: a scrape never waits on a slow or
 * hung runtime longer than `waitMs`. What it serves is the newest answer, or the last good one
 * while a new one is late (up to `staleMs` old), or nothing (the node series are then absent).
 * Calls in flight are shared: the five node gauges of one scrape ask the source once.
 */
export class NodeSampler {
  readonly #source: NodeSource;
  readonly #freshMs: number;
  readonly #waitMs: number;
  readonly #staleMs: number;
  readonly #callTimeoutMs: number;
  readonly #now: () => number;
  #last: { at: number; nodes: NodeInfo[] } | undefined;
  #asking: Promise<void> | undefined;
  #reading: Promise<NodeInfo[] | undefined> | undefined;

  constructor(source: NodeSource, options: NodeSamplerOptions = {}) {
    this.#source = source;
    this.#freshMs = options.freshMs ?? 5_000;
    this.#waitMs = options.waitMs ?? 2_000;
    this.#staleMs = options.staleMs ?? 60_000;
    this.#callTimeoutMs = options.callTimeoutMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  /** The nodes to show now, or `undefined` when there is no answer recent enough. Never rejects. */
  read(): Promise<NodeInfo[] | undefined> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<NodeInfo[] | undefined> {
    if (this.#last && this.#now() - this.#last.at < this.#freshMs) return this.#last.nodes;
    this.#asking ??= this.#ask().finally(() => {
      this.#asking = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((done) => {
      timer = setTimeout(done, this.#waitMs);
    });
    await Promise.race([this.#asking, late]);
    clearTimeout(timer);
    return this.#last && this.#now() - this.#last.at < this.#staleMs ? this.#last.nodes : undefined;
  }

  /** One call of the source; a failed one leaves the last answer to age out. */
  async #ask(): Promise<void> {
    try {
      const nodes = await this.#source(AbortSignal.timeout(this.#callTimeoutMs));
      this.#last = { at: this.#now(), nodes };
    } catch {
      // The gauges show the last answer until it is stale, then nothing: a scrape is no place for an error.
    }
  }
}
