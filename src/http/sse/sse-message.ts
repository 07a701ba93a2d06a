import type { LedgerEvent, LiveEvent } from "../event-source.ts";

/** Heartbeat: a comment line, ignored by EventSource clients, that keeps proxies from timing out. */
export const HEARTBEAT_FRAME = ": heartbeat\n\n";

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  // nginx buffers responses by default, which would hold events back.
  "x-accel-buffering": "no",
} as const;

/** A persisted event: `id` is its ledger seq, so a reconnecting client resumes after it. */
export function persistedFrame(e: LedgerEvent): string {
  return frame(e.type, { ...e.data, agentId: e.agentId, seq: e.seq, at: e.at }, e.seq);
}

/** An ephemeral event has no `id`: it is never replayed, and must not move the client's resume point. */
export function ephemeralFrame(e: Extract<LiveEvent, { persisted: false }>): string {
  return frame(e.type, { ...e.data, agentId: e.agentId });
}

function frame(type: string, data: Record<string, unknown>, id?: number): string {
  // JSON.stringify escapes CR and LF, so `data` is one line; the type is stripped of them so a
  // strange event name cannot forge extra fields.
  const head = id === undefined ? "" : `id: ${id}\n`;
  return `${head}event: ${type.replace(/[\r\n]/g, "")}\ndata: ${JSON.stringify(data)}\n\n`;
}
