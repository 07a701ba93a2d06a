import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type AssistantMessage,
  type AssistantMessageEvent,
  type Context,
  type Model,
  streamSimple,
  Type,
} from "@mariozechner/pi-ai";
import { messagesRequestFacts, tokensOf, writeMessagesStream } from "../../src/gateway/anthropic-wire.ts";
import {
  startAnthropicUpstream,
  startOpenAIChatUpstream,
  type Upstream,
  type UpstreamOptions,
} from "../support/model-upstreams.ts";

type WireApi = "anthropic-messages" | "openai-completions";

const HELLO: Context = { messages: [{ role: "user", content: "hello", timestamp: 0 }] };
const TOOL_CALLS = [
  { id: "toolu_1", name: "read", input: { path: "a.txt" } },
  { id: "toolu_2", name: "bash", input: { command: "ls -la", env: { A: "1" }, lines: [1, 2] } },
];
const USAGE = { input: 120, output: 34, cacheRead: 56, cacheWrite: 7 };

function modelFor(api: WireApi, upstream: Upstream): Model<WireApi> {
  return {
    id: "m",
    name: "m",
    api,
    provider: "test",
    baseUrl: api === "anthropic-messages" ? upstream.url : `${upstream.url}/v1`,
    reasoning: false,
    input: ["text"],
    cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
    contextWindow: 200_000,
    maxTokens: 8_192,
  };
}

async function startFor(
  api: WireApi,
  options: UpstreamOptions,
  t: { after(fn: () => Promise<void>): void },
): Promise<Upstream> {
  const upstream = await (api === "anthropic-messages"
    ? startAnthropicUpstream(options)
    : startOpenAIChatUpstream(options));
  t.after(() => upstream.close());
  return upstream;
}

/** Stream through pi-ai's real provider client; the final message, every event, and how long it took. */
async function ask(
  model: Model<WireApi>,
  context: Context,
): Promise<{ message: AssistantMessage; events: AssistantMessageEvent[]; ms: number }> {
  const started = performance.now();
  const events: AssistantMessageEvent[] = [];
  for await (const event of streamSimple(model, context, { apiKey: "k" })) events.push(event);
  const last = events.at(-1);
  assert.ok(last && (last.type === "done" || last.type === "error"), "the stream ends with done or error");
  const message = last.type === "done" ? last.message : last.error;
  assert.equal(message.errorMessage, undefined);
  return { message, events, ms: performance.now() - started };
}

for (const api of ["anthropic-messages", "openai-completions"] as const) {
  test(`${api}: a text answer arrives as text, with the API key in the provider's header`, async (t) => {
    const upstream = await startFor(api, { answer: () => ({ reply: { text: "hello world" } }) }, t);
    const { message } = await ask(modelFor(api, upstream), HELLO);
    assert.deepEqual(message.content, [{ type: "text", text: "hello world" }]);
    assert.equal(message.stopReason, "stop");
    assert.equal(upstream.calls.length, 1);
    const call = upstream.calls[0];
    assert.equal(call?.method, "POST");
    if (api === "anthropic-messages") {
      assert.equal(call?.path, "/v1/messages");
      assert.equal(call?.headers["x-api-key"], "k");
    } else {
      assert.equal(call?.path, "/v1/chat/completions");
      assert.equal(call?.headers.authorization, "Bearer k");
    }
  });

  test(`${api}: a tool-call answer arrives as toolCall blocks with parsed arguments and stopReason toolUse`, async (t) => {
    const upstream = await startFor(api, { answer: () => ({ reply: { toolCalls: TOOL_CALLS } }) }, t);
    const { message } = await ask(modelFor(api, upstream), HELLO);
    assert.deepEqual(
      message.content,
      TOOL_CALLS.map((call) => ({ type: "toolCall", id: call.id, name: call.name, arguments: call.input })),
    );
    assert.equal(message.stopReason, "toolUse");
  });

  test(`${api}: pi's usage equals the usage the upstream was told to send`, async (t) => {
    const upstream = await startFor(api, { answer: () => ({ reply: { text: "x" }, usage: USAGE }) }, t);
    const { message } = await ask(modelFor(api, upstream), HELLO);
    const { input, output, cacheRead, cacheWrite, totalTokens } = message.usage;
    assert.deepEqual({ input, output, cacheRead, cacheWrite }, USAGE);
    assert.equal(totalTokens, 120 + 34 + 56 + 7);
  });

  test(`${api}: after one 429 the SDK's own retry gets the answer`, async (t) => {
    const upstream = await startFor(
      api,
      { rateLimit: { count: 1, retryAfterSeconds: 0 }, answer: (_body, n) => ({ reply: { text: `answer ${n}` } }) },
      t,
    );
    const { message } = await ask(modelFor(api, upstream), HELLO);
    assert.deepEqual(message.content, [{ type: "text", text: "answer 0" }]);
    assert.equal(upstream.rateLimited, 1);
    assert.equal(upstream.calls.length, 2);
    assert.deepEqual(
      upstream.calls.map((call) => call.headers["x-stainless-retry-count"]),
      ["0", "1"],
    );
  });
}

test("anthropic-messages: delayMs spreads the answer over many deltas and at least that long", async (t) => {
  const text = "The quick brown fox jumps over the lazy dog, twice over.";
  const upstream = await startFor("anthropic-messages", { answer: () => ({ reply: { text }, delayMs: 300 }) }, t);
  const { message, events, ms } = await ask(modelFor("anthropic-messages", upstream), HELLO);
  assert.deepEqual(message.content, [{ type: "text", text }]);
  assert.ok(events.filter((e) => e.type === "text_delta").length >= 10, "many text deltas");
  assert.ok(ms >= 290, `took ${ms} ms`);
});

test("anthropic-messages: delayed tool input split across input_json_delta pieces still parses", async (t) => {
  const upstream = await startFor(
    "anthropic-messages",
    { answer: () => ({ reply: { toolCalls: TOOL_CALLS }, delayMs: 40 }) },
    t,
  );
  const { message, events } = await ask(modelFor("anthropic-messages", upstream), HELLO);
  assert.ok(events.filter((e) => e.type === "toolcall_delta").length > TOOL_CALLS.length, "several deltas per call");
  assert.deepEqual(
    message.content.map((block) => (block.type === "toolCall" ? block.arguments : block)),
    TOOL_CALLS.map((call) => call.input),
  );
});

test("the upstreams answer other paths with 404 in their provider's error shape", async (t) => {
  const anthropic = await startFor("anthropic-messages", {}, t);
  const openai = await startFor("openai-completions", {}, t);
  const a = await fetch(`${anthropic.url}/v1/complete`, { method: "POST", body: "{}" });
  assert.equal(a.status, 404);
  assert.equal(((await a.json()) as { error: { type: string } }).error.type, "not_found_error");
  const o = await fetch(`${openai.url}/v1/completions`, { method: "POST", body: "{}" });
  assert.equal(o.status, 404);
  assert.equal(((await o.json()) as { error: { type: string } }).error.type, "invalid_request_error");
});

test("messagesRequestFacts reads the body pi-ai really sends for a multi-turn context", async (t) => {
  const upstream = await startFor("anthropic-messages", {}, t);
  const model = modelFor("anthropic-messages", upstream);
  const usage = {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  const turn = { api: model.api, provider: model.provider, model: model.id, usage, timestamp: 0 };
  const context: Context = {
    systemPrompt: "You are terse.",
    tools: [{ name: "read", description: "Read a file", parameters: Type.Object({ path: Type.String() }) }],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "read both" },
          { type: "text", text: "files" },
        ],
        timestamp: 0,
      },
      {
        ...turn,
        role: "assistant",
        stopReason: "toolUse",
        content: [
          { type: "toolCall", id: "t1", name: "read", arguments: { path: "a" } },
          { type: "toolCall", id: "t2", name: "read", arguments: { path: "b" } },
        ],
      },
      {
        role: "toolResult",
        toolCallId: "t1",
        toolName: "read",
        isError: false,
        content: [{ type: "text", text: "alpha" }],
        timestamp: 0,
      },
      {
        role: "toolResult",
        toolCallId: "t2",
        toolName: "read",
        isError: false,
        content: [
          { type: "text", text: "beta" },
          { type: "text", text: "gamma" },
        ],
        timestamp: 0,
      },
    ],
  };
  await ask(model, context);
  const afterTools = upstream.calls.at(-1)?.body as { system: unknown; messages: unknown[]; tools: unknown };
  // pi merges consecutive tool results into one user message and puts cache_control on its last block.
  assert.equal(afterTools.messages.length, 3);
  assert.deepEqual(messagesRequestFacts(afterTools), {
    lastUserText: "read both\nfiles",
    lastToolResultText: "beta\ngamma",
    userTexts: ["read both\nfiles"],
    promptChars: JSON.stringify({ system: afterTools.system, messages: afterTools.messages, tools: afterTools.tools })
      .length,
  });

  context.messages.push(
    { ...turn, role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] },
    { role: "user", content: "thanks", timestamp: 0 },
  );
  await ask(model, context);
  // pi turns the newest user string into a text block carrying cache_control.
  const later = messagesRequestFacts(upstream.calls.at(-1)?.body);
  assert.deepEqual(
    { ...later, promptChars: 0 },
    {
      lastUserText: "thanks",
      lastToolResultText: "beta\ngamma",
      userTexts: ["read both\nfiles", "thanks"],
      promptChars: 0,
    },
  );
  assert.ok(later.promptChars > JSON.stringify(afterTools.messages).length);
});

test("messagesRequestFacts joins the text blocks of a tool result that carries an image", () => {
  const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AA==" } };
  const body = {
    messages: [
      { role: "user", content: "look" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "shot", input: {} }] },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "t1",
            content: [{ type: "text", text: "a" }, image, { type: "text", text: "b" }],
          },
        ],
      },
    ],
  };
  const facts = messagesRequestFacts(body);
  assert.equal(facts.lastUserText, "look");
  assert.equal(facts.lastToolResultText, "a\nb");
});

test("messagesRequestFacts never throws on malformed bodies", () => {
  let deep: unknown = "bottom";
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const bodies: unknown[] = [
    null,
    undefined,
    42,
    "text",
    [],
    { messages: "not an array" },
    {
      messages: [
        null,
        1,
        "x",
        { role: "user" },
        { role: "user", content: 5 },
        {
          role: "user",
          content: [null, 7, { type: "text", text: 3 }, { type: "tool_result", content: { text: "no" } }],
        },
      ],
    },
    { messages: [{ role: "user", content: [{ type: "text", text: deep }] }], tools: deep },
  ];
  for (const body of bodies) {
    const facts = messagesRequestFacts(body);
    assert.equal(facts.lastUserText, "");
    assert.equal(facts.lastToolResultText, "");
    assert.deepEqual(facts.userTexts, []);
    assert.ok(Number.isInteger(facts.promptChars) && facts.promptChars >= 0);
  }
});

test("writeMessagesStream awaits beforePiece before every event and stops with the reason once aborted", async () => {
  const controller = new AbortController();
  const written: string[] = [];
  let pieces = 0;
  const reason = new Error("paused for good");
  const options = {
    model: "m",
    messageId: "msg_1",
    inputTokens: 1,
    outputTokens: 1,
    signal: controller.signal,
    beforePiece: async () => {
      if (++pieces === 4) controller.abort(reason);
    },
  };
  const write = async (chunk: string) => {
    written.push(chunk);
  };
  await assert.rejects(
    writeMessagesStream(write, { text: "abcdef" }, { ...options, delayMs: 10 }),
    (error) => error === reason,
  );
  assert.equal(written.length, 3);
  assert.deepEqual(
    written.map((chunk) => chunk.split("\n")[0]),
    ["event: message_start", "event: content_block_start", "event: content_block_delta"],
  );
});

test("tokensOf is ceil(chars / 4), at least 1", () => {
  assert.deepEqual([0, 1, 4, 5, 400].map(tokensOf), [1, 1, 1, 2, 100]);
});
