import { setTimeout as sleep } from "node:timers/promises";
import PQueue from "p-queue";

/** How the gateway paces calls to each provider (SWARM_MODEL_CONCURRENCY, SWARM_MODEL_MAX_BACKOFF_MS). */
export interface PacingConfig {
  /** Most calls in flight to one provider at once, daemon-wide. */
  concurrency: number;
  /** Per-provider overrides of `concurrency`. */
  perProvider: Record<string, number>;
  /** The longest shared back-off one answer can impose, however long its `retry-after`. */
  maxBackoffMs: number;
}

export const DEFAULT_PACING: PacingConfig = { concurrency: 16, perProvider: {}, maxBackoffMs: 600_000 };

/** A held slot: release it once the call's answer is over. */
export type Release = () => void;

/**
 * Daemon-wide pacing of model calls, one lane per provider: a cap on calls in flight (p-queue),
 * and one back-off shared by every agent calling that provider. When a provider answers 429 or
 * "overloaded", every call to it waits out the same `retry-after` (or an exponential back-off),
 * so a hundred agents slow down together instead of each failing on its own.
 */
export class Pacing {
  readonly #lanes = new Map<string, { queue: PQueue; blockedUntil: number; strikes: number }>();

  constructor(readonly config: PacingConfig = DEFAULT_PACING) {}

  #lane(provider: string) {
    let lane = this.#lanes.get(provider);
    if (!lane) {
      lane = {
        queue: new PQueue({ concurrency: this.config.perProvider[provider] ?? this.config.concurrency }),
        blockedUntil: 0,
        strikes: 0,
      };
      this.#lanes.set(provider, lane);
    }
    return lane;
  }

  /** Wait for a slot and for the provider's back-off to pass; rejects with the signal's reason when it aborts first. */
  async slot(provider: string, signal: AbortSignal): Promise<Release> {
    const lane = this.#lane(provider);
    let release!: Release;
    const held = new Promise<void>((resolve) => (release = resolve));
    const granted = new Promise<void>((resolve, reject) => {
      lane.queue
        .add(
          async () => {
            // Inside the slot: what waits out a back-off keeps its place in the line.
            for (let wait = lane.blockedUntil - Date.now(); wait > 0; wait = lane.blockedUntil - Date.now())
              await sleep(wait, undefined, { signal });
            resolve();
            await held;
          },
          { signal },
        )
        .catch((err: unknown) => reject(signal.aborted ? signal.reason : err));
    });
    await granted;
    return release;
  }

  /** The provider refused for load: every call to it waits `retryAfterMs`, or a back-off that doubles per refusal. */
  backOff(provider: string, retryAfterMs: number | undefined): number {
    const lane = this.#lane(provider);
    lane.strikes++;
    const wait = Math.min(this.config.maxBackoffMs, retryAfterMs ?? 1000 * 2 ** Math.min(lane.strikes - 1, 6));
    lane.blockedUntil = Math.max(lane.blockedUntil, Date.now() + wait);
    return wait;
  }

  /** A call got through: the next refusal starts the back-off from the beginning again. */
  succeeded(provider: string): void {
    this.#lane(provider).strikes = 0;
  }
}

/** The wait an answer asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>): number | undefined {
  const first = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const ms = Number(first("retry-after-ms"));
  if (first("retry-after-ms") !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const after = first("retry-after");
  if (after === undefined) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
