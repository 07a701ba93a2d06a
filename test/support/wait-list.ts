/**
 * Waits on state that arrives by callback: `until` resolves with the first value `find` returns,
 * now or after a later `wake()`, and rejects with `describe()` when `timeoutMs` passes first.
 */
export interface WaitList {
  wake(): void;
  until<T>(find: () => T | undefined, timeoutMs: number, describe: () => string): Promise<T>;
}

export function createWaitList(): WaitList {
  const waiters = new Set<() => void>();
  return {
    wake: () => {
      for (const w of waiters) w();
    },
    until: (find, timeoutMs, describe) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = find();
          if (found === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(describe()));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}
