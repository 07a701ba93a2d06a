/** How much of one event-loop turn bulk work (spawns, harness starts) may take before the rest waits. */
export const BULK_SLICE_MS = 4;

let sliceStart = performance.now();
let resetQueued = false;

/**
 * Wait, if need be, for bulk work's turn: past `BULK_SLICE_MS` of bulk work since the event loop's
 * last check phase, the caller goes on in the next one, after the poll phase has taken in whatever
 * arrived meanwhile. A burst of thousands of spawns otherwise keeps the loop busy for 50–200 ms at a
 * stretch, and a pause or resume of one agent (which never waits here) waited behind all of it.
 * Callers resume in the order they began to wait.
 */
export async function bulkTurn(): Promise<void> {
  for (;;) {
    if (!resetQueued) {
      resetQueued = true;
      setImmediate(() => {
        resetQueued = false;
        sliceStart = performance.now();
      });
    }
    if (performance.now() - sliceStart < BULK_SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
