import { createHash, randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { ScriptStep } from "../spec/agent-spec.ts";
import {
  type MessagesRequestFacts,
  messagesRequestFacts,
  type ScriptedReply,
  tokensOf,
  writeMessagesStream,
} from "./anthropic-wire.ts";
import { writeOut } from "./gateway-reply.ts";
import type { ModelCaller } from "./model-caller.ts";
import type { TokenCounts } from "./usage-tap.ts";

/** What an exhausted script answers: the newest user message, echoed. */
const ECHO_STEP: ScriptStep = { text: "{{lastUserMessage}}" };

/**
 * Answer one call of a scripted agent as Anthropic's Messages API would, with the next step of its
 * script (durably: see `ScriptCursor`), all but the response's end: the caller ends it and, once
 * its last byte is with the operating system, marks the step delivered (`index`). Text may use `{{lastUserMessage}}`, `{{lastToolResult}}` and
 * `{{userMessages}}` (every user message of the conversation, oldest first, joined by a newline),
 * filled from the request. A step's `delayMs` spreads its answer, and the pace holds while the
 * agent is paused. Tokens are counted as about four characters each, in and out.
 */
export async function serveScriptStep(
  res: ServerResponse,
  body: Record<string, unknown>,
  raw: Buffer,
  caller: ModelCaller,
  signal: AbortSignal,
): Promise<{ counts: TokenCounts; index: number }> {
  const index = await caller.cursor.take(createHash("sha256").update(raw).digest("hex"));
  const step = caller.script?.[index] ?? ECHO_STEP;
  const facts = messagesRequestFacts(body);
  const reply = scriptedReply(step, facts, index);
  const counts: TokenCounts = {
    input: tokensOf(facts.promptChars),
    output: tokensOf(replyChars(reply)),
    cacheRead: 0,
    cacheWrite: 0,
  };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  await writeMessagesStream((chunk) => writeOut(res, chunk), reply, {
    model: caller.model.id,
    messageId: `msg_${randomBytes(12).toString("hex")}`,
    inputTokens: counts.input,
    outputTokens: counts.output,
    delayMs: step.delayMs,
    beforePiece: () => caller.whenRunning(signal),
    signal,
  }).catch(() => undefined); // the agent hung up mid-answer: the step is used and counts all the same
  return { counts, index };
}

function scriptedReply(step: ScriptStep, facts: MessagesRequestFacts, index: number): ScriptedReply {
  if ("text" in step) {
    const text = step.text
      .replaceAll("{{lastUserMessage}}", () => facts.lastUserText)
      .replaceAll("{{lastToolResult}}", () => facts.lastToolResultText)
      .replaceAll("{{userMessages}}", () => facts.userTexts.join("\n"));
    return { text };
  }
  const calls = "tools" in step ? step.tools : [{ tool: step.tool, args: step.args }];
  return {
    toolCalls: calls.map((call, k) => ({
      id: `toolu_${index}_${k}_${randomBytes(6).toString("hex")}`,
      name: call.tool,
      input: call.args,
    })),
  };
}

function replyChars(reply: ScriptedReply): number {
  return "text" in reply
    ? reply.text.length
    : reply.toolCalls.reduce((sum, call) => sum + call.name.length + JSON.stringify(call.input).length, 0);
}
