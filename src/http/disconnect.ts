import type { ServerResponse } from "node:http";

/**
 * Aborts when the client goes away before the answer is written, so a long `wait` does not hold a
 * waiter for a caller who left. (`res` 'close' fires on both; `writableFinished` tells them apart.)
 */
export function abortOnDisconnect(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
