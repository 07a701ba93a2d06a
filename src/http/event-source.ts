import type { LedgerEvent, LiveEvent } from "../ledger/ledger.ts";

export type { LedgerEvent, LiveEvent };

/**
 * The part of the ledger the event stream reads. Structurally a subset of `src/ledger/`, so the
 * real ledger and the in-memory test fake both fit.
 */
export interface EventSource {
  /**
   * Persisted events of the run with `seq > afterSeq`, in order, read from storage `pageSize` at a
   * time (a source held in memory may ignore it).
   */
  iterate(runId: string, afterSeq: number, pageSize?: number): AsyncIterable<LedgerEvent>;
  /**
   * One page of the same events as stored JSON text (`storedEventJson`), none above `lastSeq` at
   * the call: at least one when there is one, at most `limit`, and no more than about `maxBytes`
   * after the first. A short page is not the end: the end is the `lastSeq` seen before the call.
   */
  readStored(runId: string, afterSeq: number, limit: number, maxBytes: number): Promise<string[]>;
  /** Highest committed `seq` of the run (0 when empty). */
  lastSeq(runId: string): number;
  /**
   * Calls `listener` synchronously after each committed batch (once per event, in order) and for
   * each ephemeral event. Returns the unsubscribe function. The listener must not throw.
   */
  subscribe(runId: string, listener: (e: LiveEvent) => void): () => void;
}
