import { EventEmitter, once } from "node:events";
import { Level } from "level";
import PQueue from "p-queue";
import { SwarmError } from "../errors.ts";
import { type AppendRequest, prepareAppend, storeEvent } from "./append-request.ts";
import type {
  CommittedBatch,
  EphemeralEvent,
  IndexChanges,
  IndexPut,
  Ledger,
  LedgerEvent,
  LedgerOptions,
  LedgerStats,
  LiveEvent,
  NewEvent,
  StorageState,
} from "./ledger.ts";
import { eventKey, MAX_SEQ, RUN_META_PREFIX, runMetaKey, seqOfKey } from "./ledger-keys.ts";
import { LiveListeners } from "./live-listeners.ts";
import { ReadGate, roomToReopen, storageError } from "./storage-fault.ts";

const DEFAULT_READ_LIMIT = 1000;
const ITERATE_PAGE = 1000;
/** Keys deleted per batch while a run is erased: other runs' appends wait at most one page. */
const ERASE_PAGE = 1000;
/** While the storage is at fault, how often a recovery is tried without anyone asking. */
const RECOVERY_INTERVAL_MS = 1000;
/** The key a recovery's probe deletes (a write that leaves nothing behind). */
const PROBE_KEY = "probe";

type Db = Level<string, string>;
// Typed through level itself: abstract-level is only a transitive dependency.
const openSublevel = (db: Db, name: string) => db.sublevel(name);
type Sub = ReturnType<typeof openSublevel>;
type BatchOp = { type: "put"; sublevel: Sub; key: string; value: string } | { type: "del"; sublevel: Sub; key: string };
/** A group turned into one batch: its ops, each run's new last seq, and each append's events. */
interface Written {
  ops: BatchOp[];
  next: Map<string, number>;
  stored: LedgerEvent[][];
  /** Every event of `stored`, flattened in order, as the JSON text written. */
  json: string[];
}

/**
 * Open (creating if needed) the LevelDB ledger in the folder `path` and restore each run's last
 * seq from the last key of its range. Rejects with `INTERNAL` when the folder cannot be opened
 * (for example another process holds its lock).
 */
export async function openLedger(path: string, options: LedgerOptions = {}): Promise<Ledger> {
  const db: Db = new Level<string, string>(path);
  const ledger = new LevelLedger(db, path, options);
  try {
    await db.open();
    await ledger.restore();
  } catch (cause) {
    // Release the folder's lock so the caller can retry or another process can open it.
    await db.close().catch(() => {});
    throw new SwarmError("INTERNAL", `the ledger at ${path} could not be opened`, { cause });
  }
  return ledger;
}

class LevelLedger implements Ledger {
  readonly #db: Db;
  readonly #events: Sub;
  readonly #index: Sub;
  readonly #meta: Sub;
  /** Committed last seq per run; raised only after a batch commits, before listeners hear of it. */
  readonly #last = new Map<string, number>();
  /** Runs dropped since open: their appends are refused, so a late write cannot bring one back. */
  readonly #dropped = new Set<string>();
  readonly #listeners: LiveListeners;
  readonly #onCommit: ((batch: CommittedBatch) => void) | undefined;
  readonly #queue = new PQueue({ concurrency: 1 });
  #pending: AppendRequest[] = [];
  #flushQueued = false;
  #closing: Promise<void> | undefined;
  #closed = false;
  readonly #stats: LedgerStats = { appends: 0, batches: 0, events: 0 };
  readonly #path: string;
  readonly #dataDir: string;
  /** Set by a failed write: what every write is refused with until a recovery succeeds. */
  #fault: SwarmError | undefined;
  #recovering: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  readonly #reads = new ReadGate();
  /** Told when a recovery succeeds (`whenWritable`), or with an error when the ledger closes. */
  readonly #recovered = new EventEmitter().setMaxListeners(0);

  constructor(db: Db, path: string, options: LedgerOptions) {
    this.#db = db;
    this.#path = path;
    this.#dataDir = options.dataDir ?? path;
    this.#events = openSublevel(db, "ev");
    this.#index = openSublevel(db, "ix");
    this.#meta = openSublevel(db, "meta");
    this.#listeners = new LiveListeners(
      options.onListenerError ?? ((err, runId) => console.error(`ledger listener of run ${runId} threw:`, err)),
    );
    this.#onCommit = options.onCommit;
  }

  /** One reverse seek per known run: the last key of a run's range is its last seq. */
  async restore(): Promise<void> {
    for (const metaKey of await this.#meta.keys().all()) {
      if (!metaKey.startsWith(RUN_META_PREFIX)) continue;
      const runId = metaKey.slice(RUN_META_PREFIX.length);
      const [lastKey] = await this.#events
        .keys({ gt: eventKey(runId, 0), lte: eventKey(runId, MAX_SEQ), reverse: true, limit: 1 })
        .all();
      if (lastKey !== undefined) this.#last.set(runId, seqOfKey(lastKey));
    }
  }

  append(runId: string, events: NewEvent[], index?: IndexChanges): Promise<LedgerEvent[]> {
    if (this.#closing) return Promise.reject(closedError());
    if (this.#dropped.has(runId)) return Promise.reject(new SwarmError("RUN_NOT_FOUND", `run ${runId} was purged`));
    let prepared: Omit<AppendRequest, "resolve" | "reject">;
    try {
      prepared = prepareAppend(runId, events, index);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<LedgerEvent[]>((resolve, reject) => {
      this.#pending.push({ ...prepared, resolve, reject });
      // One queued flush at a time: everything that arrives while a batch is in flight waits
      // in #pending and is taken whole by the next flush. That is the group commit.
      if (!this.#flushQueued) {
        this.#flushQueued = true;
        void this.#queue.add(() => this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    this.#flushQueued = false;
    const group = this.#pending;
    this.#pending = [];
    let written: Written;
    let committedAt = 0;
    try {
      written = this.#build(group);
      // fsync per batch: "durable" must survive a machine crash, and group commit is what
      // keeps that affordable (one sync for every append that queued behind the last one).
      if (written.ops.length > 0) await this.#batch(written.ops, true);
      committedAt = performance.now();
    } catch (cause) {
      // Nothing was written and #last is untouched, so the seqs stay free and gap-free.
      const err = cause instanceof SwarmError ? cause : new SwarmError("INTERNAL", "ledger batch failed", { cause });
      for (const req of group) req.reject(err);
      return;
    }
    if (written.ops.length > 0) this.#stats.batches += 1;
    for (const [runId, seq] of written.next) this.#last.set(runId, seq);
    this.#stats.appends += group.length;
    // Synchronously after the commit and after #last moved: the replay-then-live recipe rests on it.
    group.forEach((req, i) => {
      for (const event of written.stored[i] ?? []) {
        this.#stats.events += 1;
        this.#listeners.deliver(req.runId, { persisted: true, ...event });
      }
    });
    if (written.ops.length > 0) this.#observe(group, written, committedAt);
    for (const [i, req] of group.entries()) req.resolve(written.stored[i] ?? []);
  }

  #observe(group: AppendRequest[], written: Written, committedAt: number): void {
    if (!this.#onCommit) return;
    try {
      this.#onCommit({
        appends: group.length,
        appendSeconds: group.map((req) => (committedAt - req.queuedAt) / 1000),
        events: written.stored.flat(),
        json: written.json,
      });
    } catch {
      // An observer (metrics) must not be able to fail the appends it watches.
    }
  }

  /** Assign seqs on top of the committed ones and turn a group into one batch. */
  #build(group: AppendRequest[]): Written {
    const commitAt = Date.now();
    const next = new Map<string, number>();
    const ops: BatchOp[] = [];
    const stored: LedgerEvent[][] = [];
    const json: string[] = [];
    for (const req of group) {
      const out: LedgerEvent[] = [];
      if (req.events.length > 0 && !this.#last.has(req.runId) && !next.has(req.runId)) {
        ops.push({ type: "put", sublevel: this.#meta, key: runMetaKey(req.runId), value: String(commitAt) });
      }
      let seq = next.get(req.runId) ?? this.#last.get(req.runId) ?? 0;
      for (const e of req.events) {
        seq += 1;
        const { value, event } = storeEvent(req.runId, seq, e, commitAt);
        ops.push({ type: "put", sublevel: this.#events, key: eventKey(req.runId, seq), value });
        out.push(event);
        json.push(value);
      }
      if (req.events.length > 0) next.set(req.runId, seq);
      for (const key of req.del) ops.push({ type: "del", sublevel: this.#index, key });
      for (const { key, value } of req.put) ops.push({ type: "put", sublevel: this.#index, key, value });
      stored.push(out);
    }
    return { ops, next, stored, json };
  }

  dropRun(runId: string, marker: IndexPut): Promise<void> {
    if (this.#closing) return Promise.reject(closedError());
    this.#dropped.add(runId);
    // In the writer queue: every append made before this call is committed first (a queued flush
    // is always ahead of it), and nothing of the run can follow.
    const dropped = this.#writeTask(async () => {
      const ops: BatchOp[] = [
        { type: "del", sublevel: this.#meta, key: runMetaKey(runId) },
        { type: "put", sublevel: this.#index, key: marker.key, value: marker.value },
      ];
      await this.#batch(ops, true);
      this.#last.delete(runId);
    });
    // A batch that failed wrote nothing: the run is still there and may be written again.
    dropped.catch(() => this.#dropped.delete(runId));
    return dropped;
  }

  async eraseRun(runId: string, index: { prefixes: string[]; keys: string[] }): Promise<void> {
    await this.#erase(this.#events, { gt: eventKey(runId, 0), lte: eventKey(runId, MAX_SEQ) });
    for (const prefix of index.prefixes) await this.#erase(this.#index, prefixRange(prefix));
    const ops: BatchOp[] = index.keys.map((key) => ({ type: "del", sublevel: this.#index, key }));
    await this.#writeTask(() => this.#batch(ops, true));
  }

  /** Delete every key of `range`, a page per writer task. */
  async #erase(sublevel: Sub, range: { gt?: string; gte?: string; lt?: string; lte?: string }): Promise<void> {
    for (;;) {
      const erased = await this.#writeTask(async () => {
        const keys = await sublevel.keys({ ...range, limit: ERASE_PAGE }).all();
        if (keys.length > 0) await this.#batch(keys.map((key): BatchOp => ({ type: "del", sublevel, key })));
        return keys.length;
      });
      if (erased < ERASE_PAGE) return;
    }
  }

  /** Work in the writer queue, refused once the ledger closes. */
  #writeTask<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closing) return Promise.reject(closedError());
    return this.#queue.add(() => this.#guard(work));
  }

  /**
   * Every write goes through here. A write that fails may have left part of a record in LevelDB's
   * log, and a later write there would be lost when the log is replayed (tried: after ENOSPC, the
   * writes made once space was freed were gone after a reopen). So the first failure puts the
   * storage at fault: writes are refused until `#recover` reopened the database.
   */
  async #batch(ops: BatchOp[], sync = false): Promise<void> {
    if (this.#fault) throw this.#fault;
    try {
      await this.#db.batch(ops, { sync });
    } catch (cause) {
      if (this.#closing) throw closedError(cause);
      this.#fault = storageError(cause, this.#dataDir);
      this.#retry ??= setInterval(() => void this.checkStorage(), RECOVERY_INTERVAL_MS).unref();
      throw this.#fault;
    }
  }

  storage(): StorageState {
    return this.#fault ? { ok: false, error: this.#fault } : { ok: true };
  }

  async checkStorage(): Promise<StorageState> {
    if (this.#fault && !this.#closing) {
      this.#recovering ??= this.#queue
        .add(() => this.#recover())
        .finally(() => {
          this.#recovering = undefined;
        });
      await this.#recovering;
    }
    return this.storage();
  }

  async whenWritable(): Promise<void> {
    if (this.#closing) throw closedError();
    if (this.#fault) await once(this.#recovered, "recovered");
  }

  /** In the writer queue: reopen the database and write a probe; the fault stays if either fails. */
  async #recover(): Promise<void> {
    if (!this.#fault || this.#closing || !(await roomToReopen(this.#path))) return;
    try {
      await this.#reads.alone(async () => {
        await this.#db.close();
        await this.#db.open();
        // Sublevels close with their database but do not open with it.
        for (const sublevel of [this.#events, this.#index, this.#meta]) await sublevel.open();
      });
      await this.#db.batch([{ type: "del", sublevel: this.#meta, key: PROBE_KEY }], { sync: true });
    } catch (cause) {
      this.#fault = storageError(cause, this.#dataDir);
      return;
    }
    this.#fault = undefined;
    clearInterval(this.#retry);
    this.#retry = undefined;
    this.#recovered.emit("recovered");
  }

  async read(runId: string, afterSeq: number, limit = DEFAULT_READ_LIMIT): Promise<LedgerEvent[]> {
    const values = await this.readStored(runId, afterSeq, limit);
    return values.map((v) => JSON.parse(v) as LedgerEvent);
  }

  async readStored(runId: string, afterSeq: number, limit = DEFAULT_READ_LIMIT, maxBytes?: number): Promise<string[]> {
    this.#assertOpen();
    const upTo = this.lastSeq(runId);
    const from = Math.max(0, Math.floor(afterSeq));
    if (from >= upTo || !(limit > 0)) return [];
    const range = { gt: eventKey(runId, from), lte: eventKey(runId, upTo), limit: Math.floor(limit) };
    if (maxBytes === undefined) return this.#guard(() => this.#events.values(range).all());
    // classic-level stops a `nextv` once it read more than `highWaterMarkBytes`: one trip to the
    // storage thread per page, where `all()` takes one per 16 KiB. The sublevel passes the option
    // on; its abstract-level types do not list it, hence the object apart.
    const options = { ...range, highWaterMarkBytes: Math.max(0, Math.floor(maxBytes)) };
    return this.#guard(async () => {
      const values = this.#events.values(options);
      try {
        return await values.nextv(range.limit);
      } finally {
        await values.close();
      }
    });
  }

  async *iterate(runId: string, afterSeq: number, pageSize = ITERATE_PAGE): AsyncIterable<LedgerEvent> {
    let cursor = afterSeq;
    for (;;) {
      const page = await this.read(runId, cursor, pageSize);
      yield* page;
      const last = page.at(-1);
      if (last === undefined || page.length < pageSize) return;
      cursor = last.seq;
    }
  }

  lastSeq(runId: string): number {
    return this.#last.get(runId) ?? 0;
  }

  runIds(): string[] {
    return [...this.#last.keys()];
  }

  async getIndex(key: string): Promise<string | undefined> {
    this.#assertOpen();
    // level v10 resolves a missing key with undefined rather than throwing NotFound.
    const value = await this.#guard(() => this.#index.get(key));
    return value ?? undefined;
  }

  async listIndex(prefix: string): Promise<IndexPut[]> {
    this.#assertOpen();
    const entries = await this.#guard(async () => {
      const out: IndexPut[] = [];
      // Stop at the first key outside the prefix instead of computing a byte-exact upper bound.
      for await (const [key, value] of this.#index.iterator({ gte: prefix })) {
        if (!key.startsWith(prefix)) break;
        out.push({ key, value });
      }
      return out;
    });
    return entries;
  }

  subscribe(runId: string, listener: (e: LiveEvent) => void): () => void {
    return this.#listeners.subscribe(runId, listener);
  }

  publish(runId: string, event: EphemeralEvent): void {
    if (this.#closed) return;
    this.#listeners.deliver(runId, {
      persisted: false,
      runId,
      type: event.type,
      agentId: event.agentId,
      data: event.data,
    });
  }

  stats(): LedgerStats {
    return { ...this.#stats };
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#retry);
      // `once` rejects its waiters on an `error` event.
      if (this.#recovered.listenerCount("recovered") > 0) this.#recovered.emit("error", closedError());
      await this.#queue.onIdle();
      this.#closed = true;
      this.#listeners.clear();
      await this.#db.close();
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError();
  }

  /**
   * A read racing `close` gets level's not-open error; callers see the ledger's own code instead,
   * and the storage's fault when a recovery could not open the database again. Reads wait out a
   * recovery's reopen.
   */
  async #guard<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await this.#reads.read(read);
    } catch (err) {
      if (this.#closing) throw closedError(err);
      if (this.#fault && this.#db.status !== "open") throw this.#fault;
      throw err;
    }
  }
}

/** Keys starting with `prefix` (not empty): up to the prefix with its last character raised by one. */
function prefixRange(prefix: string): { gte: string; lt: string } {
  return { gte: prefix, lt: prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1) };
}

function closedError(cause?: unknown): SwarmError {
  return new SwarmError("LEDGER_CLOSED", undefined, { cause });
}
