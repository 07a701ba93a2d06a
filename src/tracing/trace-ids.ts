import { hash } from "node:crypto";

/**
 * Trace and span ids derived from the ledger's own ids, so a span that ends after a restart lands
 * in the same tree as its parent exported before it: one trace per run (its id from the run id),
 * one span id per agent, per turn of an agent, per tool call and per model call.
 */

const digest = (parts: readonly (string | number)[], hexChars: number): string => {
  const hex = hash("sha256", parts.join("\u0000"), "hex").slice(0, hexChars);
  // An all-zero id is invalid in OpenTelemetry; 2^-64 odds, but never send one.
  return /^0+$/.test(hex) ? `${"0".repeat(hexChars - 1)}1` : hex;
};

export const traceIdOf = (runId: string): string => digest(["trace", runId], 32);
export const runSpanId = (runId: string): string => digest(["run", runId], 16);
export const agentSpanId = (agentId: string): string => digest(["agent", agentId], 16);
/** Turn `turn` (1 for the first) of the agent. */
export const turnSpanId = (agentId: string, turn: number): string => digest(["turn", agentId, turn], 16);
export const toolSpanId = (agentId: string, toolCallId: string): string => digest(["tool", agentId, toolCallId], 16);
export const chatSpanId = (agentId: string, callId: string): string => digest(["chat", agentId, callId], 16);

/** The fields a log line about a run (and one of its agents) carries to join its trace. */
export function logTraceFields(about: { runId: string; agentId?: string }): { trace_id: string; span_id: string } {
  return {
    trace_id: traceIdOf(about.runId),
    span_id: about.agentId === undefined ? runSpanId(about.runId) : agentSpanId(about.agentId),
  };
}
