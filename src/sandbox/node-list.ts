import { SwarmError } from "../errors.ts";
import type { NodeInfo, SandboxRuntime } from "./runtime.ts";

/**
 * The runtime's `nodes()`, or `RUNTIME_UNAVAILABLE` once `timeoutMs` passed: a caller that answers
 * someone (a route, a scrape) never waits longer on a slow engine, even one that ignores the signal.
 */
export async function nodesWithin(runtime: SandboxRuntime, timeoutMs: number): Promise<NodeInfo[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  const late = new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () =>
      reject(
        new SwarmError(
          "RUNTIME_UNAVAILABLE",
          `the ${runtime.kind} runtime did not list its nodes within ${timeoutMs / 1000} s`,
        ),
      ),
    ),
  );
  late.catch(() => undefined); // lost races must not surface as unhandled rejections
  try {
    return await Promise.race([runtime.nodes(signal), late]);
  } catch (err) {
    if (signal.aborted) return late;
    throw err;
  }
}
