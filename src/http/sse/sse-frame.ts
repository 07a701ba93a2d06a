import type { EphemeralEvent, LedgerEvent } from "../../ledger/ledger.ts";
import { storedEventHead } from "../../ledger/stored-event.ts";

/**
 * Set through `reply.header()` so `@fastify/sse` copies them over its own defaults when it writes
 * the head: the charset is explicit, and `no-transform` keeps proxies from compressing or buffering.
 */
export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
} as const;

/**
 * Live events reach every stream of a run as the same object, so each is turned into its frame
 * once and the frame shared: with many clients, serializing per client was most of the cost.
 */
const built = new WeakMap<object, string>();

/**
 * A persisted event's frame: `id` is its ledger seq, so a reconnecting client resumes after it;
 * `data` is the event's data with `agentId`, `seq` and `at` (an own field of those names is
 * overwritten where it stands).
 */
export function persistedFrame(e: LedgerEvent): string {
  return once(e, () => frame(e.type, JSON.stringify({ ...e.data, agentId: e.agentId, seq: e.seq, at: e.at }), e.seq));
}

/** An ephemeral event has no `id`: it is never replayed, and must not move the client's resume point. */
export function ephemeralFrame(e: EphemeralEvent): string {
  return once(e, () => frame(e.type, JSON.stringify({ ...e.data, agentId: e.agentId })));
}

/**
 * The frame of an event from the ledger's stored text, byte for byte `persistedFrame` of the event
 * `read` parses from it, built without parsing `data`: its text is reused with the three fields
 * appended. Parsed whole when the text is not in the ledger's shape, or when `data` has a key that
 * is one of those fields (at any depth: rare, and the parse puts it where `persistedFrame` does).
 */
export function storedFrame(json: string): { seq: number; frame: string } {
  const head = storedEventHead(json);
  if (head === undefined || /"(?:agentId|seq|at)":/.test(head.dataJson)) {
    const e = JSON.parse(json) as LedgerEvent;
    return { seq: e.seq, frame: persistedFrame(e) };
  }
  const open = head.dataJson === "{}" ? "{" : `${head.dataJson.slice(0, -1)},`;
  const data = `${open}"agentId":${head.agentIdJson},"seq":${head.seq},"at":${head.atJson}}`;
  return { seq: head.seq, frame: frame(head.type, data, head.seq) };
}

function once(e: object, build: () => string): string {
  let cached = built.get(e);
  if (cached === undefined) {
    cached = build();
    built.set(e, cached);
  }
  return cached;
}

/**
 * One SSE frame. JSON text has CR and LF escaped, so `data` is one line; `event` is written as
 * given, so a strange name is stripped of them and cannot forge fields.
 */
function frame(type: string, json: string, id?: number): string {
  const name = type.replace(/[\r\n]/g, "");
  // As @fastify/sse wrote them: a name left empty is no `event` line (the client reads `message`).
  const event = name === "" ? "" : `event: ${name}\n`;
  return id === undefined ? `${event}data: ${json}\n\n` : `id: ${id}\n${event}data: ${json}\n\n`;
}
