/**
 * Serialize async work per key: calls for one sandbox run one after the other (a close never
 * interleaves with a start or a freeze), calls for different sandboxes run in parallel.
 */
export type KeyedLock = <T>(key: string, work: () => Promise<T>) => Promise<T>;

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  return (key, work) => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}
