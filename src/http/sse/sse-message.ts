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

/**
 * Live events reach every stream of a run as the same object, so each is turned into a message
 * once and the message shared: with many clients, serializing per client was most of the cost.
 */
const built = new WeakMap<object, SSEMessage>();

/** A persisted event: `id` is its ledger seq, so a reconnecting client resumes after it. */
export function persistedMessage(e: LedgerEvent): SSEMessage {
  return once(e, () => message(e.type, { ...e.data, agentId: e.agentId, seq: e.seq, at: e.at }, e.seq));
}

/** An ephemeral event has no `id`: it is never replayed, and must not move the client's resume point. */
export function ephemeralMessage(e: Extract<LiveEvent, { persisted: false }>): SSEMessage {
  return once(e, () => message(e.type, { ...e.data, agentId: e.agentId }));
}

function once(e: object, build: () => SSEMessage): SSEMessage {
  let cached = built.get(e);
  if (!cached) {
    cached = build();
    built.set(e, cached);
  }
  return cached;
}

function message(type: string, data: Record<string, unknown>, id?: number): SSEMessage {
  // JSON.stringify escapes CR and LF, so `data` is one line (the route's serializer passes the
  // string through); `event` is written as given, so a strange name is stripped of them and
  // cannot forge fields.
  const event = type.replace(/[\r\n]/g, "");
  const json = JSON.stringify(data);
  return id === undefined ? { event, data: json } : { id: String(id), event, data: json };
}
