import PQueue from "p-queue";
import { DEFAULT_START_CONCURRENCY } from "../src/config.ts";
import { bulkTurn } from "./bulk-turn.ts";

/** Run a sandbox or harness start once the start line admits it: `StartQueue.run`, as the effects get it. */
export type Admit = <T>(agentId: string, signal: AbortSignal, start: () => Promise<T>) => Promise<T>;

/**
 * Admission control for harness starts: at most `concurrency` sandboxes being made and started at
 * once, the rest waiting in arrival order. On a small machine a burst of spawns otherwise starts
 * every harness together, each gets a sliver of the CPU, and some miss their start deadline; here
 * every start gets the machine it was sized for, and its deadline counts from when it begins.
 * A waiting start whose signal aborts (its agent stopped) leaves the line at once.
 */
export class StartQueue {
  readonly #queue: PQueue;
  /** Agents waiting for a start slot, in arrival order (a Set keeps insertion order). */
  readonly #waiting = new Set<string>();

  constructor(concurrency = DEFAULT_START_CONCURRENCY) {
    this.#queue = new PQueue({ concurrency });
  }

  /** Run `start` for `agentId` once a slot is free. Rejects with the signal's reason when aborted first. */
  async run<T>(agentId: string, signal: AbortSignal, start: () => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    this.#waiting.add(agentId);
    try {
      return await this.#queue.add(
        async () => {
          // A start is bulk work too: a control that arrived meanwhile goes first.
          await bulkTurn();
          this.#waiting.delete(agentId);
          signal.throwIfAborted();
          return start();
        },
        { signal },
      );
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw err;
    } finally {
      this.#waiting.delete(agentId);
    }
  }

  /** Every waiting agent's place in the line, 1 for the next to start. */
  positions(): Map<string, number> {
    const places = new Map<string, number>();
    let place = 0;
    for (const agentId of this.#waiting) places.set(agentId, ++place);
    return places;
  }
}
