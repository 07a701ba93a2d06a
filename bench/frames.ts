import type { LedgerEvent, NewEvent } from "../src/ledger/ledger.ts";

/** A persisted harness event of realistic size (~350 bytes stored): a bash tool result. */
export function benchEvent(agentId: string, i: number): NewEvent {
  return {
    type: "tool_end",
    agentId,
    data: {
      hseq: i,
      toolCallId: `call_${String(i).padStart(8, "0")}`,
      toolName: "bash",
      isError: false,
      result: { content: [{ type: "text", text: `line ${i}: ${"x".repeat(160)}` }] },
    },
  };
}

export function benchEvents(agentId: string, from: number, count: number): NewEvent[] {
  return Array.from({ length: count }, (_, k) => benchEvent(agentId, from + k));
}

/**
 * The SSE frame the daemon sends for a persisted event (`persistedFrame` in
 * src/http/sse/sse-frame.ts), byte for byte, so the bare baseline pushes the same frames.
 */
export function frameOf(e: LedgerEvent): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify({ ...e.data, agentId: e.agentId, seq: e.seq, at: e.at })}\n\n`;
}

/** The ledger's stored JSON of an event (src/ledger/append-request.ts), for the raw level baseline. */
export function storedValueOf(e: LedgerEvent): string {
  return JSON.stringify({ runId: e.runId, seq: e.seq, type: e.type, agentId: e.agentId, at: e.at, data: e.data });
}
