import { setTimeout as sleep } from "node:timers/promises";

export interface PollOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** The first pause, doubled at each look until it reaches `intervalMs` (default: `intervalMs` from the start). */
  firstIntervalMs?: number;
  signal?: AbortSignal;
  /** Named in the timeout error. */
  what: string;
}

/**
 * Call `probe` until it returns something other than `undefined`, or throw at the deadline.
 * For kernel state that announces no event (a freezer settling, a pid disappearing, a socket
 * starting to accept). Aborting rejects with the signal's reason.
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  options: PollOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const intervalMs = options.intervalMs ?? 25;
  let pause = Math.min(options.firstIntervalMs ?? intervalMs, intervalMs);
  for (;;) {
    options.signal?.throwIfAborted();
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await sleep(pause, undefined, options.signal ? { signal: options.signal } : undefined).catch((err: unknown) => {
      throw options.signal?.aborted ? options.signal.reason : err;
    });
    pause = Math.min(pause * 2, intervalMs);
  }
}
