import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api.ts";

export type Polled<T> = { data: T | null; error: string | null };

/**
 * Calls `load` now, again every `everyMs` and whenever `key` changes; keeps the newest answer and
 * the newest error (cleared by the next success). Stops with the component.
 */
export function usePolled<T>(load: () => Promise<T>, key: unknown, everyMs: number | null): Polled<T> {
  const [state, setState] = useState<Polled<T>>({ data: null, error: null });
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const data = await load();
        if (alive) setState({ data, error: null });
      } catch (err) {
        if (alive) setState((previous) => ({ data: previous.data, error: err instanceof ApiError || err instanceof Error ? err.message : String(err) }));
      }
      if (alive && everyMs !== null) timer = setTimeout(tick, everyMs);
    };
    void tick();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [key]);
  return state;
}
