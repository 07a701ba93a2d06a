import type { AgentSessionEvent } from "@mariozechner/pi-coding-agent";
import type { HarnessEventType } from "./protocol.ts";

/** Longest tool output or argument text carried on one event. */
const MAX_EVENT_TEXT = 16 * 1024;

export interface WireEvent {
  event: HarnessEventType;
  data: Record<string, unknown>;
}

/**
 * Translate one pi session event into swarmd's wire event (docs/design.md "Event names on the wire"),
 * or `undefined` for events nobody outside needs (message_update other than text deltas, ...).
 */
export function toWireEvent(e: AgentSessionEvent): WireEvent | undefined {
  switch (e.type) {
    case "agent_start":
    case "turn_start":
      return { event: e.type, data: {} };
    case "agent_end":
      return { event: "agent_end", data: { messages: e.messages.length } };
    case "turn_end": {
      const message = e.message;
      const stopReason = message.role === "assistant" ? message.stopReason : undefined;
      return { event: "turn_end", data: { stopReason, toolResults: e.toolResults.length } };
    }
    case "message_start":
    case "message_end":
      return { event: e.type, data: { role: e.message.role } };
    case "message_update": {
      const delta = e.assistantMessageEvent;
      if (delta.type === "text_delta") return { event: "text", data: { delta: delta.delta } };
      if (delta.type === "thinking_delta") return { event: "thinking", data: { delta: delta.delta } };
      return undefined;
    }
    case "tool_execution_start":
      return { event: "tool_start", data: { toolCallId: e.toolCallId, toolName: e.toolName, args: clip(e.args) } };
    case "tool_execution_update":
      return {
        event: "tool_update",
        data: { toolCallId: e.toolCallId, toolName: e.toolName, output: resultText(e.partialResult) },
      };
    case "tool_execution_end":
      return {
        event: "tool_end",
        data: { toolCallId: e.toolCallId, toolName: e.toolName, isError: e.isError, output: resultText(e.result) },
      };
    case "compaction_start":
      return { event: "compaction_start", data: { reason: e.reason } };
    case "compaction_end":
      return { event: "compaction_end", data: { reason: e.reason, aborted: e.aborted, error: e.errorMessage } };
    case "auto_retry_start":
      return {
        event: "auto_retry_start",
        data: { attempt: e.attempt, maxAttempts: e.maxAttempts, delayMs: e.delayMs, error: e.errorMessage },
      };
    case "auto_retry_end":
      return { event: "auto_retry_end", data: { success: e.success, attempt: e.attempt, error: e.finalError } };
    case "queue_update":
      return { event: "queue_update", data: { steering: [...e.steering], followUp: [...e.followUp] } };
    default:
      return undefined;
  }
}

/** Text of a tool result (`{content: [{type:"text", text}]}`), clipped. */
export function resultText(result: unknown): string {
  if (typeof result !== "object" || result === null || !("content" in result)) return "";
  const content = (result as { content: unknown }).content;
  if (!Array.isArray(content)) return "";
  const text = content
    .map((block: unknown) =>
      typeof block === "object" && block !== null && "text" in block && typeof block.text === "string"
        ? block.text
        : "",
    )
    .join("");
  return text.length > MAX_EVENT_TEXT ? `${text.slice(0, MAX_EVENT_TEXT)}…[truncated]` : text;
}

function clip(args: unknown): unknown {
  const text = JSON.stringify(args ?? {});
  return text.length > MAX_EVENT_TEXT ? { truncated: text.slice(0, MAX_EVENT_TEXT) } : args;
}
