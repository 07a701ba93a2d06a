import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { type Api, type Model, streamSimple } from "@mariozechner/pi-ai";
import {
  createUsageTap,
  isTappedApi,
  TAPPED_APIS,
  type TappedApi,
  type TokenCounts,
} from "../../src/gateway/usage-tap.ts";

const SSE = "text/event-stream; charset=utf-8";

/** What pi-ai itself reports for `body`, served as a provider's SSE answer on 127.0.0.1. */
async function piUsage(api: TappedApi, body: string): Promise<TokenCounts> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": SSE });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const model: Model<Api> = {
      id: "test-model",
      name: "Test model",
      api,
      provider: api === "anthropic-messages" ? "anthropic" : "openai",
      baseUrl: api === "anthropic-messages" ? origin : `${origin}/v1`,
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 100_000,
      maxTokens: 1_000,
    };
    const stream = streamSimple(
      model,
      { messages: [{ role: "user", content: "hi", timestamp: 0 }] },
      { apiKey: "test", maxRetries: 0 },
    );
    const message = await stream.result();
    assert.notEqual(message.stopReason, "error", message.errorMessage);
    const { input, output, cacheRead, cacheWrite } = message.usage;
    return { input, output, cacheRead, cacheWrite };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** Feeds `body` to a fresh tap in chunks of 1 to 7 bytes, so lines, `\r\n` and UTF-8 characters split. */
function tapUsage(api: TappedApi, contentType: string | undefined, body: string | Uint8Array): TokenCounts | null {
  const tap = createUsageTap(api, contentType);
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const sizes = [3, 1, 7, 2, 5, 4, 6];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length] ?? 1;
    tap.push(bytes.subarray(at, at + size));
    at += size;
  }
  return tap.result();
}

/** Asserts the tap reads `body` exactly as pi-ai does, and that both give `expected`. */
async function assertMatchesPi(api: TappedApi, body: string, expected: TokenCounts): Promise<void> {
  assert.deepEqual(await piUsage(api, body), expected, "pi-ai's own numbers");
  assert.deepEqual(tapUsage(api, SSE, body), expected, "the tap's numbers");
}

const sse = (events: Array<[name: string | null, data: unknown]>, eol = "\n") =>
  events
    .map(
      ([name, data]) =>
        `${name ? `event: ${name}${eol}` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}${eol}${eol}`,
    )
    .join("");

const anthropicStream = (startUsage: object, deltaUsage: object, eol = "\n") =>
  `: a comment line${eol}${eol}` +
  sse(
    [
      [
        "message_start",
        {
          type: "message_start",
          message: {
            id: "msg_1",
            type: "message",
            role: "assistant",
            model: "test-model",
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: startUsage,
          },
        },
      ],
      ["ping", { type: "ping" }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      [
        "content_block_delta",
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "héllo ✓ 🚀" } },
      ],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      [
        "message_delta",
        { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: deltaUsage },
      ],
      ["message_stop", { type: "message_stop" }],
    ],
    eol,
  );

const chunk = (rest: object) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "test-model",
  ...rest,
});
const completionsStream = (usageChunks: object[]) =>
  sse([
    [null, chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })],
    [null, chunk({ choices: [{ index: 0, delta: { content: "héllo 🚀" }, finish_reason: null }] })],
    [null, chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })],
    ...usageChunks.map((c): [null, object] => [null, chunk(c)]),
    [null, "[DONE]"],
  ]);

const responsesStream = (final: { type: string; status: string; usage: object | null }) => {
  const item = {
    type: "message",
    id: "msg_1",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "héllo 🚀", annotations: [] }],
  };
  return sse([
    ["response.created", { type: "response.created", response: { id: "resp_1", status: "in_progress", usage: null } }],
    [
      "response.output_item.added",
      { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } },
    ],
    [
      "response.content_part.added",
      {
        type: "response.content_part.added",
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      },
    ],
    [
      "response.output_text.delta",
      { type: "response.output_text.delta", output_index: 0, content_index: 0, delta: "héllo 🚀" },
    ],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    [
      final.type,
      { type: final.type, response: { id: "resp_1", status: final.status, output: [item], usage: final.usage } },
    ],
  ]);
};

test("the tapped APIs are exactly the three wire APIs", () => {
  assert.deepEqual([...TAPPED_APIS], ["anthropic-messages", "openai-completions", "openai-responses"]);
  assert.equal(isTappedApi("openai-responses"), true);
  assert.equal(isTappedApi("google-generative-ai"), false);
  assert.equal(isTappedApi("toString"), false);
});

test("anthropic: message_start sets all four counts and message_delta overrides the ones it carries, as pi-ai does", async () => {
  const start = {
    input_tokens: 412,
    output_tokens: 1,
    cache_read_input_tokens: 20480,
    cache_creation_input_tokens: 1536,
  };
  // input_tokens null keeps message_start's; output_tokens is the running total; cache reads are restated.
  const delta = { input_tokens: null, output_tokens: 87, cache_read_input_tokens: 20992 };
  const expected = { input: 412, output: 87, cacheRead: 20992, cacheWrite: 1536 };
  await assertMatchesPi("anthropic-messages", anthropicStream(start, delta, "\r\n"), expected);
  await assertMatchesPi("anthropic-messages", anthropicStream(start, { output_tokens: 5 }), {
    ...expected,
    output: 5,
    cacheRead: 20480,
  });
});

test("openai-completions: the final choices-less usage chunk, with cached tokens taken out of the prompt", async () => {
  const usage = {
    prompt_tokens: 2006,
    completion_tokens: 300,
    total_tokens: 2306,
    prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 256 },
  };
  await assertMatchesPi("openai-completions", completionsStream([{ choices: [], usage }]), {
    input: 86,
    output: 300,
    cacheRead: 1920,
    cacheWrite: 0,
  });
});

test("openai-completions: OpenRouter's cache writes, DeepSeek's cache hits and Moonshot's usage on the choice", async () => {
  const openRouter = {
    prompt_tokens: 5000,
    completion_tokens: 40,
    prompt_tokens_details: { cached_tokens: 4200, cache_write_tokens: 700 },
  };
  await assertMatchesPi("openai-completions", completionsStream([{ choices: [], usage: openRouter }]), {
    input: 800,
    output: 40,
    cacheRead: 3500,
    cacheWrite: 700,
  });
  const deepSeek = {
    prompt_tokens: 1000,
    completion_tokens: 12,
    prompt_cache_hit_tokens: 640,
    prompt_cache_miss_tokens: 360,
  };
  await assertMatchesPi("openai-completions", completionsStream([{ choices: [], usage: deepSeek }]), {
    input: 360,
    output: 12,
    cacheRead: 640,
    cacheWrite: 0,
  });
  const moonshot = {
    choices: [
      {
        index: 0,
        delta: {},
        finish_reason: null,
        usage: { prompt_tokens: 50, completion_tokens: 7, cached_tokens: 9 },
      },
    ],
  };
  await assertMatchesPi("openai-completions", completionsStream([moonshot]), {
    input: 50,
    output: 7,
    cacheRead: 0,
    cacheWrite: 0,
  });
});

test("openai-responses: response.completed's usage, cached tokens taken out of input_tokens", async () => {
  const usage = {
    input_tokens: 3000,
    input_tokens_details: { cached_tokens: 2048 },
    output_tokens: 500,
    output_tokens_details: { reasoning_tokens: 320 },
    total_tokens: 3500,
  };
  await assertMatchesPi(
    "openai-responses",
    responsesStream({ type: "response.completed", status: "completed", usage }),
    { input: 952, output: 500, cacheRead: 2048, cacheWrite: 0 },
  );
});

test("openai-responses: a truncated response's usage counts, where pi-ai reports none", async () => {
  const usage = { input_tokens: 700, input_tokens_details: { cached_tokens: 0 }, output_tokens: 64, total_tokens: 764 };
  const body = responsesStream({ type: "response.incomplete", status: "incomplete", usage });
  assert.deepEqual(
    await piUsage("openai-responses", body),
    { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    "pi-ai 0.73.1 ignores response.incomplete",
  );
  assert.deepEqual(tapUsage("openai-responses", SSE, body), { input: 700, output: 64, cacheRead: 0, cacheWrite: 0 });
});

test("a stream without usage gives null (pi-ai reports zeros)", async () => {
  const body = completionsStream([]);
  assert.deepEqual(await piUsage("openai-completions", body), { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
  assert.equal(tapUsage("openai-completions", SSE, body), null);
  assert.equal(
    tapUsage(
      "openai-responses",
      SSE,
      responsesStream({ type: "response.completed", status: "completed", usage: null }),
    ),
    null,
  );
  assert.equal(tapUsage("anthropic-messages", SSE, ""), null);
});

test("non-streamed JSON bodies use the same formulas", () => {
  const message = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    content: [{ type: "text", text: "hi" }],
    usage: { input_tokens: 12, output_tokens: 34, cache_read_input_tokens: 56, cache_creation_input_tokens: 78 },
  };
  assert.deepEqual(tapUsage("anthropic-messages", "application/json", JSON.stringify(message)), {
    input: 12,
    output: 34,
    cacheRead: 56,
    cacheWrite: 78,
  });
  const completion = {
    id: "chatcmpl-1",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
    usage: {
      prompt_tokens: 5000,
      completion_tokens: 40,
      prompt_tokens_details: { cached_tokens: 4200, cache_write_tokens: 700 },
    },
  };
  assert.deepEqual(tapUsage("openai-completions", "application/json; charset=utf-8", JSON.stringify(completion)), {
    input: 800,
    output: 40,
    cacheRead: 3500,
    cacheWrite: 700,
  });
  const response = {
    id: "resp_1",
    object: "response",
    status: "completed",
    output: [],
    usage: { input_tokens: 3000, input_tokens_details: { cached_tokens: 2048 }, output_tokens: 500 },
  };
  assert.deepEqual(tapUsage("openai-responses", undefined, JSON.stringify(response)), {
    input: 952,
    output: 500,
    cacheRead: 2048,
    cacheWrite: 0,
  });
  assert.equal(
    tapUsage(
      "anthropic-messages",
      "application/json",
      JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
    ),
    null,
  );
  assert.equal(
    tapUsage("openai-responses", "application/json", JSON.stringify(response).slice(0, -1)),
    null,
    "a truncated body",
  );
});

test("result() is valid mid-stream and counts a last event the body ends without a blank line after", () => {
  const tap = createUsageTap("anthropic-messages", SSE);
  const start = sse([
    ["message_start", { type: "message_start", message: { usage: { input_tokens: 10, output_tokens: 1 } } }],
  ]);
  tap.push(new TextEncoder().encode(start));
  assert.deepEqual(tap.result(), { input: 10, output: 1, cacheRead: 0, cacheWrite: 0 });
  tap.push(
    new TextEncoder().encode(
      `event: message_delta\ndata: ${JSON.stringify({ type: "message_delta", delta: {}, usage: { output_tokens: 9 } })}`,
    ),
  );
  assert.deepEqual(tap.result(), { input: 10, output: 9, cacheRead: 0, cacheWrite: 0 });
});

test("anthropic events count only under a Messages event name, as pi-ai reads them", () => {
  const usage = { type: "message_start", message: { usage: { input_tokens: 10 } } };
  assert.equal(
    tapUsage(
      "anthropic-messages",
      SSE,
      sse([
        [null, usage],
        ["other", usage],
      ]),
    ),
    null,
  );
});

test("nothing after [DONE] counts", () => {
  const usage = { choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } };
  const body = sse([
    [null, chunk(usage)],
    [null, "[DONE]"],
    [null, chunk({ choices: [], usage: { prompt_tokens: 999 } })],
  ]);
  assert.deepEqual(tapUsage("openai-completions", SSE, body), { input: 10, output: 2, cacheRead: 0, cacheWrite: 0 });
});

test("counts that are not non-negative safe integers are 0, and input never goes negative", () => {
  const usage = { prompt_tokens: -5, completion_tokens: 1.5, prompt_tokens_details: { cached_tokens: "100" } };
  assert.deepEqual(tapUsage("openai-completions", SSE, sse([[null, { choices: [], usage }]])), {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
  });
  const huge = {
    input_tokens: 1e300,
    output_tokens: 2 ** 53,
    cache_read_input_tokens: null,
    cache_creation_input_tokens: 7,
  };
  assert.deepEqual(tapUsage("anthropic-messages", "application/json", JSON.stringify({ usage: huge })), {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 7,
  });
  const lying = { input_tokens: 10, input_tokens_details: { cached_tokens: 50 }, output_tokens: 1 };
  assert.deepEqual(tapUsage("openai-responses", "application/json", JSON.stringify({ usage: lying })), {
    input: 0,
    output: 1,
    cacheRead: 50,
    cacheWrite: 0,
  });
});

test("garbage bytes never throw and carry no usage", () => {
  let seed = 42;
  const garbage = Uint8Array.from({ length: 200_000 }, () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 24;
  });
  for (const api of TAPPED_APIS) {
    for (const contentType of [SSE, "application/json"])
      assert.equal(tapUsage(api, contentType, garbage), null, `${api} ${contentType}`);
    const shapes = [
      "data: null\n\n",
      "data: 5\n\n",
      'data: {"usage":[1]}\n\n',
      'event: message_delta\ndata: {"type":"message_delta"}\n\n',
      'data: {"choices":7,"usage":"x"}\n\n',
      "data:\n\n",
      "event\n\n",
    ];
    assert.doesNotThrow(() => tapUsage(api, SSE, shapes.join("")));
  }
});

test("an SSE line or event over 1 MiB is skipped, and what follows still counts", () => {
  const pad = "x".repeat(1_100_000);
  const huge = { type: "message_start", message: { usage: { input_tokens: 999 }, pad } };
  const split = JSON.stringify(huge).match(/[\s\S]{1,400000}/g) ?? [];
  const later = { type: "message_delta", usage: { output_tokens: 3 } };
  const overLongLine = `event: message_start\ndata: ${JSON.stringify(huge)}\n\n`;
  const overLongEvent = `event: message_start\n${split.map((part) => `data: ${part}\n`).join("")}\n`;
  // Whole, this event's data is valid JSON (trailing whitespace): its over-long line must drop it all.
  const overLongTail = `event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { usage: { input_tokens: 999 } } })}\ndata: ${" ".repeat(1_100_000)}\n\n`;
  const body = overLongLine + overLongEvent + overLongTail + sse([["message_delta", later]]);
  const tap = createUsageTap("anthropic-messages", SSE);
  const bytes = new TextEncoder().encode(body);
  for (let at = 0; at < bytes.length; at += 65_536) tap.push(bytes.subarray(at, at + 65_536));
  assert.deepEqual(tap.result(), { input: 0, output: 3, cacheRead: 0, cacheWrite: 0 });
});

test("a JSON body over 16 MiB gives null", () => {
  const body = new TextEncoder().encode(JSON.stringify({ usage: { input_tokens: 1 }, pad: "x".repeat(17 * 2 ** 20) }));
  const tap = createUsageTap("anthropic-messages", "application/json");
  for (let at = 0; at < body.length; at += 1 << 20) tap.push(body.subarray(at, at + (1 << 20)));
  assert.equal(tap.result(), null);
});
