import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { isServiceError, isUnreachable } from "../client/client-errors.ts";

/**
 * A successful tool answer: a one-line summary the model reads first, the JSON it can act on, and
 * the same object as `structuredContent` for clients that use it.
 */
export function toolOk(summary: string, data: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: `${summary}\n${JSON.stringify(data, null, 2)}` }], structuredContent: data };
}

/**
 * A failed tool call as a tool error (`isError`), never a protocol error, so the model sees it and
 * can correct itself: the service's status and message, or an unreachable address naming
 * `SWARM_URL`, or the local failure's own message.
 */
function toolError(err: unknown): CallToolResult {
  if (isServiceError(err)) {
    const text = `swarmd refused ${err.method} ${err.path} with HTTP ${err.status}: ${err.message}`;
    return failure(text, { error: err.message, status: err.status });
  }
  if (isUnreachable(err)) return failure(err.message, { error: err.message, url: err.url, unreachable: true });
  const message = err instanceof Error ? err.message : String(err);
  return failure(message, { error: message });
}

function failure(text: string, data: Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: "text", text }], structuredContent: data };
}

/** Runs a tool body and turns anything it throws into `toolError`. */
export async function guarded(body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return toolError(err);
  }
}

/** A tool input the schema cannot express (exactly one of spec/specName). */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolInputError";
  }
}
