import type { LiveEvent } from "./ledger.ts";

type Listener = (e: LiveEvent) => void;

/**
 * Per-run live listeners. Each subscription is its own entry, so one function subscribed twice
 * gets two deliveries and two independent unsubscribes.
 */
export class LiveListeners {
  readonly #byRun = new Map<string, Set<{ listener: Listener }>>();
  readonly #onError: (err: unknown, runId: string) => void;

  constructor(onError: (err: unknown, runId: string) => void) {
    this.#onError = onError;
  }

  subscribe(runId: string, listener: Listener): () => void {
    let set = this.#byRun.get(runId);
    if (!set) {
      set = new Set();
      this.#byRun.set(runId, set);
    }
    const entry = { listener };
    set.add(entry);
    return () => {
      const current = this.#byRun.get(runId);
      if (!current?.delete(entry)) return;
      if (current.size === 0) this.#byRun.delete(runId);
    };
  }

  /**
   * Deliver one event to the run's listeners. Iterates the live set on purpose: a listener removed
   * during delivery gets nothing more, one added gets the rest (the replay recipe dedups by seq).
   */
  deliver(runId: string, event: LiveEvent): void {
    const set = this.#byRun.get(runId);
    if (!set) return;
    for (const entry of set) {
      try {
        entry.listener(event);
      } catch (err) {
        this.#report(err, runId);
      }
    }
  }

  clear(): void {
    this.#byRun.clear();
  }

  #report(err: unknown, runId: string): void {
    // The error sink must not be able to break the writer either.
    try {
      this.#onError(err, runId);
    } catch {
      /* nothing left to tell */
    }
  }
}
