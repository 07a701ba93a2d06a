/**
 * Small rate tools for input the service does not trust: a token bucket that says how long to stop
 * reading, and a log that speaks once per burst instead of once per bad line.
 */

export interface TokenBucket {
  /** Spend `amount` (the balance may go into debt); returns ms until the balance is back to zero, 0 if it is not in debt. */
  take(amount: number): number;
}

/** `capacity` tokens at most, refilled at `perSecond`. */
export function createTokenBucket(capacity: number, perSecond: number, now: () => number = Date.now): TokenBucket {
  let balance = capacity;
  let last = now();
  return {
    take(amount) {
      const t = now();
      balance = Math.min(capacity, balance + ((t - last) / 1000) * perSecond);
      last = t;
      balance -= amount;
      return balance >= 0 ? 0 : Math.ceil((-balance / perSecond) * 1000);
    },
  };
}

/**
 * A log that writes the first message of a burst at once and then at most one per `intervalMs`,
 * saying how many it held back in between.
 */
export function createLimitedLog(
  log: (message: string) => void,
  intervalMs = 10_000,
  now: () => number = Date.now,
): (message: string) => void {
  let lastAt = -Infinity;
  let held = 0;
  return (message) => {
    const t = now();
    if (t - lastAt < intervalMs) {
      held++;
      return;
    }
    lastAt = t;
    const suffix = held > 0 ? ` (${held} similar held back)` : "";
    held = 0;
    try {
      log(`${message}${suffix}`);
    } catch {
      // a failing log must not turn bad input into a crash
    }
  };
}
