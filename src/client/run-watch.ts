import type { RunSnapshot } from "../swarm-api.ts";
import type { SwarmEvent } from "./event-stream.ts";
import { type RunTracker, trackRun } from "./run-tracker.ts";
import type { SwarmClient } from "./swarm-client.ts";

export type StopWhen =
  /** Everything the ledger held when the watch began has been received. */
  | "caught-up"
  /** Caught up, and every agent of the run has ended: nothing persisted can follow. */
  | "run-over";

export interface WatchOptions {
  /** Events with a seq above this one (default 0: the whole run); `"snapshot"`: after the snapshot's `asOf`. */
  afterSeq?: number | "snapshot";
  stopWhen: StopWhen;
  signal?: AbortSignal;
}

/** A run's events from `afterSeq`, with its tree kept current; one pass of `events()`. */
export interface RunWatch {
  readonly snapshot: RunSnapshot;
  readonly tracker: RunTracker;
  /** The highest seq received, or `afterSeq` when none was: where a caller continues from. */
  readonly lastSeq: number;
  /** Set once `events()` ended on its own: by `stopWhen`, or because `signal` aborted. */
  readonly stoppedBy: StopWhen | "aborted" | undefined;
  /** Every event (ephemeral ones included) until `stopWhen` holds or `signal` aborts. */
  events(): AsyncGenerator<SwarmEvent>;
}

/**
 * Snapshot first, then the stream: the snapshot's `asOf` tells when the replay has caught up, and
 * its agents seed the tree that tells when the run is over (spec 6.3, "start from a snapshot").
 * Rejects with the client's errors (404 for an unknown run).
 */
export async function watchRun(client: SwarmClient, runId: string, options: WatchOptions): Promise<RunWatch> {
  const snapshot = await client.getRun(runId, { signal: options.signal });
  const tracker = trackRun(snapshot);
  let lastSeq = options.afterSeq === "snapshot" ? snapshot.asOf : (options.afterSeq ?? 0);
  let stoppedBy: RunWatch["stoppedBy"];
  const done = (): boolean => {
    if (lastSeq < snapshot.asOf) return false;
    if (options.stopWhen === "caught-up" || tracker.isOver()) stoppedBy = options.stopWhen;
    return stoppedBy !== undefined;
  };

  return {
    snapshot,
    tracker,
    get lastSeq() {
      return lastSeq;
    },
    get stoppedBy() {
      return stoppedBy;
    },
    async *events() {
      if (done()) return;
      for await (const event of client.events(runId, { afterSeq: lastSeq, signal: options.signal })) {
        tracker.apply(event);
        if (event.seq !== null) lastSeq = Math.max(lastSeq, event.seq);
        yield event;
        if (done()) return;
      }
      if (options.signal?.aborted) stoppedBy = "aborted";
    },
  };
}
