import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api.ts";

export type Polled<T> = { data: T | null; error: string | null };

/** A read that has not answered in this long is given up, so one hung request cannot stop the polling. */
const READ_TIMEOUT_MS = 30_000;

/**
 * Calls `load` now, again every `everyMs` and whenever `key` changes; keeps the newest answer and
 * the newest error (cleared by the next success). Stops with the component, and for good on a 404:
 * what is gone (a purged run, its agents) does not come back.
 */
export function usePolled<T>(
  load: (signal: AbortSignal) => Promise<T>,
  key: unknown,
  everyMs: number | null,
): Polled<T> {
  const [state, setState] = useState<Polled<T>>({ data: null, error: null });
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      let again = everyMs !== null;
      try {
        const data = await load(AbortSignal.timeout(READ_TIMEOUT_MS));
        if (alive) setState({ data, error: null });
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) again = false;
        if (alive)
          setState((previous) => ({ data: previous.data, error: err instanceof Error ? err.message : String(err) }));
      }
      if (alive && again) timer = setTimeout(tick, everyMs ?? 0);
    };
    void tick();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [key]);
  return state;
}
