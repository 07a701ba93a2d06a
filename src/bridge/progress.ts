import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const INTERVAL_MS = 5_000;

/**
 * While a tool holds a long wait (get_result, watch_events), send `notifications/progress` every
 * 5 s when the caller gave a progress token. Clients time requests out (60 s by default in the SDK)
 * unless progress resets the clock, and waits here run to 240 s. Returns the function that stops it.
 */
export function reportProgress(extra: ToolExtra, totalSeconds: number, message: string): () => void {
  const token = extra._meta?.progressToken;
  if (token === undefined || totalSeconds <= 0) return () => undefined;
  const started = Date.now();
  const timer = setInterval(() => {
    const elapsed = Math.min(totalSeconds, Math.round((Date.now() - started) / 1000));
    extra
      .sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: elapsed, total: totalSeconds, message },
      })
      .catch(() => undefined); // a client that went away is noticed by the request itself
  }, INTERVAL_MS);
  return () => clearInterval(timer);
}
