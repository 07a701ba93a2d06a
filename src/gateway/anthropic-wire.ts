import { setTimeout as delay } from "node:timers/promises";
/** One scripted answer: text, or tool calls. */
export type ScriptedReply =
  | { text: string }
  | { toolCalls: Array<{ id: string; name: string; input: Record<string, unknown> }> };

/** What a scripted answer needs from an Anthropic Messages request body (already JSON.parse'd, so `unknown`, possibly hostile). */
export interface MessagesRequestFacts {
  /** Text of the newest user message that has text of its own (string content, or its `text` blocks joined; tool_result blocks are not user text); "" when none. */
  lastUserText: string;
  /** Text of the newest `tool_result` block (its string content, or its `text` blocks joined); "" when none. */
  lastToolResultText: string;
  /** The text of every user message that has text of its own, oldest first (the conversation the model was given). */
  userTexts: string[];
  /** Characters of the request's system prompt + messages + tools as JSON: a deterministic size to derive input tokens from. */
  promptChars: number;
}

/**
 * Read the facts a scripted answer needs. Never throws: a field of the wrong shape counts as absent.
 * Text blocks are joined with "\n", as pi-ai joins a tool result's texts into one string on this wire.
 * pi-ai sends tool results as `tool_result` blocks of a user message (consecutive results merged into
 * one), so the newest user message may carry no user text; the search then goes further back.
 */
export function messagesRequestFacts(body: unknown): MessagesRequestFacts {
  const request = isRecord(body) ? body : {};
  const messages = Array.isArray(request.messages) ? request.messages : [];
  let lastUserText: string | undefined;
  let lastToolResultText: string | undefined;
  const userTexts: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message: unknown = messages[i];
    if (!isRecord(message) || message.role !== "user") continue;
    const own = ownText(message.content);
    if (own !== undefined) userTexts.push(own);
    lastUserText ??= own;
    lastToolResultText ??= newestToolResultText(message.content);
  }
  return {
    lastUserText: lastUserText ?? "",
    lastToolResultText: lastToolResultText ?? "",
    userTexts: userTexts.reverse(),
    promptChars: jsonChars({ system: request.system, messages: request.messages, tools: request.tools }),
  };
}

/** Timing and accounting of one streamed answer. */
export interface StreamOptions {
  /** Echoed in message_start. */
  model: string;
  /** The message id, e.g. "msg_...". */
  messageId: string;
  /** Reported in message_start usage. */
  inputTokens: number;
  /** Reported in message_delta usage. */
  outputTokens: number;
  /** Reported in message_start usage as `cache_read_input_tokens`; 0 when absent. */
  cacheReadTokens?: number;
  /** Reported in message_start usage as `cache_creation_input_tokens`; 0 when absent. */
  cacheWriteTokens?: number;
  /** Spread the answer's deltas over this many ms (split text into up to ~20 pieces, sleep between them); 0/undefined: at once. */
  delayMs?: number;
  /** Awaited before every piece is written: the caller holds the stream here while the agent is paused. */
  beforePiece?: () => Promise<void>;
  /** Stop writing when aborted: the returned promise then rejects with `signal.reason`. */
  signal: AbortSignal;
}

const PIECES = 20;

/**
 * Write one answer as an Anthropic Messages SSE body (message_start, content_block_start/delta/stop per block — text_delta for text, input_json_delta for tool input —, message_delta with stop_reason "end_turn" or "tool_use" and usage {output_tokens}, message_stop).
 * `write` returns a promise that resolves when the chunk is flushed (the caller wraps res.write + drain).
 * Each SSE event is one piece: `beforePiece` is awaited before each, and with `delayMs` each delta is
 * preceded by an equal share of the delay.
 */
export async function writeMessagesStream(
  write: (chunk: string) => Promise<void>,
  reply: ScriptedReply,
  options: StreamOptions,
): Promise<void> {
  const blocks =
    "text" in reply
      ? [{ kind: "text" as const, text: reply.text }]
      : reply.toolCalls.map((call) => ({ kind: "tool" as const, call, text: JSON.stringify(call.input) }));
  const delayed = (options.delayMs ?? 0) > 0;
  const split = blocks.map((block) => splitText(block.text, delayed ? Math.ceil(PIECES / blocks.length) : 1));
  const deltaCount = split.reduce((sum, pieces) => sum + pieces.length, 0);
  const pause = delayed && deltaCount > 0 ? (options.delayMs ?? 0) / deltaCount : 0;
  const emit = async (data: { type: string } & Record<string, unknown>, sleepFirst = false) => {
    // An abort during the pause rejects with the signal's own reason, as everywhere else here.
    if (sleepFirst && pause > 0)
      await delay(pause, undefined, { signal: options.signal }).catch(() => options.signal.throwIfAborted());
    options.signal.throwIfAborted();
    await options.beforePiece?.();
    options.signal.throwIfAborted();
    await write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
  };

  await emit({
    type: "message_start",
    message: {
      id: options.messageId,
      type: "message",
      role: "assistant",
      model: options.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: options.inputTokens,
        cache_creation_input_tokens: options.cacheWriteTokens ?? 0,
        cache_read_input_tokens: options.cacheReadTokens ?? 0,
        output_tokens: 0,
      },
    },
  });
  for (const [index, block] of blocks.entries()) {
    const contentBlock =
      block.kind === "text"
        ? { type: "text", text: "" }
        : { type: "tool_use", id: block.call.id, name: block.call.name, input: {} };
    await emit({ type: "content_block_start", index, content_block: contentBlock });
    for (const piece of split[index] ?? []) {
      const delta =
        block.kind === "text" ? { type: "text_delta", text: piece } : { type: "input_json_delta", partial_json: piece };
      await emit({ type: "content_block_delta", index, delta }, true);
    }
    await emit({ type: "content_block_stop", index });
  }
  await emit({
    type: "message_delta",
    delta: { stop_reason: "text" in reply ? "end_turn" : "tool_use", stop_sequence: null },
    usage: { output_tokens: options.outputTokens },
  });
  await emit({ type: "message_stop" });
}

/** A rough, deterministic token count: ceil(chars / 4), at least 1. */
export function tokensOf(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A message's own text: string content, or its `text` blocks; undefined when it has none. */
function ownText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  return textOfBlocks(content);
}

function newestToolResultText(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  for (let i = content.length - 1; i >= 0; i--) {
    const block: unknown = content[i];
    if (!isRecord(block) || block.type !== "tool_result") continue;
    return typeof block.content === "string" ? block.content : (textOfBlocks(block.content) ?? "");
  }
  return undefined;
}

function textOfBlocks(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((block: unknown) =>
    isRecord(block) && block.type === "text" && typeof block.text === "string" ? [block.text] : [],
  );
  return texts.length > 0 ? texts.join("\n") : undefined;
}

/** JSON length of a parsed body part; a body nested deeper than JSON.stringify's stack counts as 0. */
function jsonChars(value: unknown): number {
  try {
    return JSON.stringify(value).length;
  } catch {
    return 0;
  }
}

/** Up to `count` pieces of about equal length, never splitting a code point; "" yields no piece. */
function splitText(text: string, count: number): string[] {
  const points = Array.from(text);
  const size = Math.max(1, Math.ceil(points.length / count));
  const pieces: string[] = [];
  for (let start = 0; start < points.length; start += size) pieces.push(points.slice(start, start + size).join(""));
  return pieces;
}
