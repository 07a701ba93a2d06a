import type { SwarmEvent } from "./event-stream.ts";
import { watchRun } from "./run-watch.ts";
import type { SwarmClient } from "./swarm-client.ts";

export interface CollectOptions {
  afterSeq: number;
  /** How long to wait for events; 0 returns what the ledger already holds. */
  maxWaitSeconds: number;
  maxEvents: number;
  /** Also keep ephemeral events (text deltas, tool updates); they carry no seq. */
  includeEphemeral: boolean;
  /** Return as soon as an event of one of these types arrives. */
  untilTypes?: string[];
  signal?: AbortSignal;
}

export interface CollectedEvents {
  runId: string;
  events: SwarmEvent[];
  /** Pass as `afterSeq` to continue exactly where this window ended. */
  lastSeq: number;
  /** Why the window closed. */
  stoppedBy: "max-events" | "until-type" | "run-over" | "caught-up" | "max-wait";
  /** Every agent of the run has ended: no further persisted events will come. */
  runOver: boolean;
}

/** Bounds catching up on the ledger when the caller asked not to wait at all. */
const CATCH_UP_LIMIT_MS = 15_000;

/**
 * A bounded window of a run's events (the bridge's `watch_events`): persisted events after
 * `afterSeq`, replayed and then live, until `maxEvents`, an `untilTypes` event, the run's end, or
 * `maxWaitSeconds`, whichever comes first.
 */
export async function collectEvents(
  client: SwarmClient,
  runId: string,
  options: CollectOptions,
): Promise<CollectedEvents> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const events: SwarmEvent[] = [];
  let stoppedBy: CollectedEvents["stoppedBy"] | undefined;
  const watch = await watchRun(client, runId, {
    afterSeq: options.afterSeq,
    stopWhen: options.maxWaitSeconds > 0 ? "run-over" : "caught-up",
    signal,
  });
  // The window opens once the snapshot is in: a slow snapshot must not eat the caller's wait.
  const limitMs = options.maxWaitSeconds > 0 ? options.maxWaitSeconds * 1000 : CATCH_UP_LIMIT_MS;
  const timer = setTimeout(() => stop.abort(), limitMs);
  try {
    for await (const event of watch.events()) {
      if (event.seq === null && !options.includeEphemeral) continue;
      events.push(event);
      if (events.length >= options.maxEvents) stoppedBy = "max-events";
      else if (options.untilTypes?.includes(event.type)) stoppedBy = "until-type";
      if (stoppedBy) break;
    }
    // The caller's own cancel is not a closed window: let it surface as the cancel it is.
    if (options.signal?.aborted) throw options.signal.reason;
    const ended = watch.stoppedBy === "aborted" ? "max-wait" : (watch.stoppedBy ?? "max-wait");
    return { runId, events, lastSeq: watch.lastSeq, stoppedBy: stoppedBy ?? ended, runOver: watch.tracker.isOver() };
  } finally {
    clearTimeout(timer);
  }
}
