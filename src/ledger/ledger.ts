/**
 * The ledger port: the durable, ordered record of every persisted event of every run (spec §2.6,
 * §6). One writer, atomic group-committed batches, a gap-free `seq` per run starting at 1.
 * The LevelDB adapter, `openLedger`, lives in `level-ledger.ts`, which imports this contract; the
 * contract does not import it back (no cycle: `make check` runs dependency-cruiser).
 */

import type { SwarmError } from "../errors.ts";

/** One persisted event of a run. */
export interface LedgerEvent {
  runId: string;
  /** Gap-free per run, starting at 1, never reused (also across restarts). Sent as the SSE `id`. */
  seq: number;
  type: string;
  /** `null` for run-level events. */
  agentId: string | null;
  /** Epoch milliseconds: the caller's `at`, or the time the batch was committed. */
  at: number;
  /** JSON data as stored: exactly what a later `read` returns. Treat as read-only. */
  data: Record<string, unknown>;
}

/** An event to append; the ledger assigns `runId`, `seq` and (unless given) `at`. */
export interface NewEvent {
  type: string;
  agentId: string | null;
  /** Must be JSON-serialisable; it is captured (serialised) when `append` is called. */
  data: Record<string, unknown>;
  at?: number;
}

/**
 * An extra fact written in the same atomic batch as events: agent→run index, idempotency keys,
 * the last recorded harness hseq per agent, ...
 */
export interface IndexPut {
  key: string;
  value: string;
}

/** Index changes of one `append`. Deletes are applied before puts, so a key in both ends up put. */
export interface IndexChanges {
  put?: IndexPut[];
  del?: string[];
}

/** What a subscriber sees: persisted events after their commit, and ephemeral ones never stored. */
export type LiveEvent =
  | ({ persisted: true } & LedgerEvent)
  | { persisted: false; runId: string; type: string; agentId: string | null; data: Record<string, unknown> };

/** An ephemeral event as published: no seq, never stored. */
export interface EphemeralEvent {
  type: string;
  agentId: string | null;
  data: Record<string, unknown>;
}

/** Counters of the writer, for metrics and for tests of group commit. */
export interface LedgerStats {
  /** `append` calls that were committed. */
  appends: number;
  /** Atomic LevelDB batches written; fewer than `appends` when group commit merged calls. */
  batches: number;
  /** Events committed. */
  events: number;
}

/**
 * The run ledger.
 *
 * Errors: every method of a closed (or closing) ledger that touches storage rejects with a
 * `SwarmError` of code `LEDGER_CLOSED`. A malformed append (empty `type`, a `runId` that is empty
 * or contains `!`, data that is not a JSON object) rejects with `INTERNAL` and writes nothing; it
 * never fails the other appends grouped with it. A failed batch rejects every append in it with
 * `STORAGE_FULL` when the disk had no room, else `INTERNAL` (cause attached), writes nothing and
 * consumes no seq. It also puts the storage at fault (`storage()`): from then on every write is
 * refused with that error at once, until a recovery (`checkStorage`, and a retry every second)
 * reopened the database and a probe write went through.
 *
 * Replay-then-live with no gap and no duplicate (what the SSE stream does):
 * 1. `subscribe(runId, l)` and buffer the persisted events `l` receives;
 * 2. replay with `iterate(runId, lastSent)` (or `read` pages) and note the highest seq read;
 * 3. then take buffered and later live persisted events, dropping any with `seq <=` that highest.
 * This loses nothing because `lastSeq` is raised before listeners are notified, listeners are
 * notified synchronously right after the batch commits, and `read` never returns an event above
 * `lastSeq` at its start: every event is either readable by the replay or notified after step 1.
 */
export interface Ledger {
  /**
   * Append events of one run atomically, together with `index` changes, in one batch.
   * Resolves with the stored events (seq assigned) once durable; listeners have been notified by
   * then. Appends that arrive while a batch is being written are merged into the next single
   * batch (group commit); the order of calls is the order of seqs. An append with no events
   * still orders and writes its index changes. Rejects with `LEDGER_CLOSED` once `close` was called,
   * and with `RUN_NOT_FOUND` once `dropRun` was called for the run.
   */
  append(runId: string, events: NewEvent[], index?: IndexChanges): Promise<LedgerEvent[]>;

  /**
   * Persisted events of a run with `seq > afterSeq`, in seq order, at most `limit` (default 1000),
   * none above `lastSeq(runId)` at the time of the call. One bounded range scan per call, so
   * paging a 100,000-event run costs one seek per page. An unknown run gives `[]`.
   */
  read(runId: string, afterSeq: number, limit?: number): Promise<LedgerEvent[]>;

  /**
   * `read` without the parse, for readers that pass events on as JSON: the text of each event as
   * stored (`storedEventJson` in `stored-event.ts`, whose `storedEventHead` reads it). With
   * `maxBytes`, one read from storage that stops once the page holds more than that many bytes
   * (it holds at least one event), so it may be shorter than `limit` before the run's end: the
   * caller reads on until it has the `lastSeq` it saw before the call.
   */
  readStored(runId: string, afterSeq: number, limit?: number, maxBytes?: number): Promise<string[]>;

  /**
   * All persisted events after `afterSeq`, in order, paging with `read` (so no LevelDB iterator
   * stays open while a slow consumer holds the loop) in pages of `pageSize` (default 1000): a
   * consumer that reads slowly holds one page in memory. Ends at the first short page; events
   * committed after that are for the live listeners.
   */
  iterate(runId: string, afterSeq: number, pageSize?: number): AsyncIterable<LedgerEvent>;

  /** Highest committed seq of the run; 0 for an unknown run. Synchronous: kept in memory. */
  lastSeq(runId: string): number;

  /** Runs with at least one committed event, in no particular order. */
  runIds(): string[];

  /** The index value under `key`, or `undefined`. */
  getIndex(key: string): Promise<string | undefined>;

  /** Index entries whose key starts with `prefix`, in key order (`""` lists all). */
  listIndex(prefix: string): Promise<IndexPut[]>;

  /**
   * Live listener for one run: called synchronously after each committed batch with the run's new
   * events (once per event, seq order), and synchronously from `publish` for ephemeral events.
   * A listener that throws is reported to `onListenerError` and keeps its subscription; it never
   * breaks the writer or other listeners. Returns the unsubscribe function (idempotent).
   */
  subscribe(runId: string, listener: (e: LiveEvent) => void): () => void;

  /**
   * Ephemeral event: delivered now to the run's current subscribers only, never stored, no seq.
   * A no-op after `close` (late harness deltas during shutdown are not errors).
   */
  publish(runId: string, event: EphemeralEvent): void;

  /**
   * The first step of removing a run for good (`DELETE /runs/:runId?purge=true`): in one atomic,
   * fsync'd batch, ordered after every append made before the call, the run leaves the list of runs
   * and `marker` is put in the index. From the call on, appends to the run are refused with
   * `RUN_NOT_FOUND`; once it resolves `runIds`, `lastSeq` and `read` no longer know the run, and
   * neither does a reopened ledger. Its events and index keys stay until `eraseRun`, which the
   * marker is there to finish after a crash. Idempotent.
   */
  dropRun(runId: string, marker: IndexPut): Promise<void>;

  /**
   * The second step: delete the run's events, then every index key starting with one of
   * `prefixes`, then `keys` in the order given (put the marker last). Page by page through the
   * writer queue, so other runs' appends go in between; the last batch is fsync'd, and LevelDB's log
   * keeps order, so every deletion is durable once it resolves. Idempotent: a rerun after a crash
   * finishes the job.
   */
  eraseRun(runId: string, index: { prefixes: string[]; keys: string[] }): Promise<void>;

  /**
   * Whether writes go through: `ok: false` from a failed write until a recovery succeeded, with the
   * error writes are refused with meanwhile. Synchronous (metrics read it at each scrape).
   */
  storage(): StorageState;

  /**
   * `storage()` once the storage was tried again when it is at fault: the database reopened (LevelDB
   * must not write after a failed write before it is reopened) and a probe written, when the disk
   * has room for it. One attempt at a time; never rejects.
   */
  checkStorage(): Promise<StorageState>;

  /**
   * Resolves once the storage takes writes again (at once when it does); rejects with
   * `LEDGER_CLOSED` when the ledger closes first. For writes that wait out a full disk.
   */
  whenWritable(): Promise<void>;

  /** Writer counters since open. */
  stats(): LedgerStats;

  /**
   * Refuse new appends, wait for the queued ones to commit, drop the listeners, then close the
   * database. Idempotent: every call resolves when the ledger is closed.
   */
  close(): Promise<void>;
}

/** Whether the ledger can write, and if not the error its writes are refused with. */
export type StorageState = { ok: true } | { ok: false; error: SwarmError };

/** Whether writes are refused for want of space (`swarmd_storage_full`). */
export const isStorageFull = (state: StorageState): boolean => !state.ok && state.error.code === "STORAGE_FULL";

/** One committed batch, as `LedgerOptions.onCommit` hears of it (what metrics count). */
export interface CommittedBatch {
  /** `append` calls merged into this one batch by group commit. */
  appends: number;
  /** Per append, in call order: seconds from its `append` call to its commit (queueing included). */
  appendSeconds: number[];
  /** The batch's events, seq order per run. Read-only. */
  events: LedgerEvent[];
  /** `events[i]` as the JSON text the ledger wrote: what an observer hands to another thread without cloning objects. */
  json: string[];
}

/** Options of `openLedger`. */
export interface LedgerOptions {
  /** Where listener errors go; defaults to `console.error`. Must not throw. */
  onListenerError?: (err: unknown, runId: string) => void;
  /**
   * Told of every batch written, synchronously after the listeners and before the appends resolve.
   * An observer, not a writer: what it throws is dropped, so it can never fail an append.
   */
  onCommit?: (batch: CommittedBatch) => void;
  /** The folder `STORAGE_FULL` names (the daemon's data folder); default the ledger's own. */
  dataDir?: string;
}
