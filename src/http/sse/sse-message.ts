import type { SSEMessage } from "@fastify/sse";
import type { LedgerEvent, LiveEvent } from "../event-source.ts";

/**
 * Set through `reply.header()` so `@fastify/sse` copies them over its own defaults when it writes
 * the head: the charset is explicit, and `no-transform` keeps proxies from compressing or buffering.
 */
export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
} as const;

/** A persisted event: `id` is its ledger seq, so a reconnecting client resumes after it. */
export function persistedMessage(e: LedgerEvent): SSEMessage {
  return message(e.type, { ...e.data, agentId: e.agentId, seq: e.seq, at: e.at }, e.seq);
}

/** An ephemeral event has no `id`: it is never replayed, and must not move the client's resume point. */
export function ephemeralMessage(e: Extract<LiveEvent, { persisted: false }>): SSEMessage {
  return message(e.type, { ...e.data, agentId: e.agentId });
}

function message(type: string, data: Record<string, unknown>, id?: number): SSEMessage {
  // The plugin serializes `data` with JSON.stringify, which escapes CR and LF, so it is one line;
  // it writes `event` as given, so a strange event name is stripped of them and cannot forge fields.
  const event = type.replace(/[\r\n]/g, "");
  return id === undefined ? { event, data } : { id: String(id), event, data };
}
