import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  messagesRequestFacts,
  type ScriptedReply,
  tokensOf,
  writeMessagesStream,
} from "../../src/gateway/anthropic-wire.ts";

/** One request an upstream received; `body` is the parsed JSON (the raw text when it was not JSON). */
export interface UpstreamCall {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface UpstreamAnswer {
  reply: ScriptedReply;
  /** Tokens to report; absent counts derive from the request's and the reply's sizes. */
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
  delayMs?: number;
}

export interface UpstreamOptions {
  /** Decide each call's answer (default: echo "ok"). Called with the parsed request body and the call number (0-based, counting only answered calls). */
  answer?: (body: unknown, n: number) => UpstreamAnswer;
  /**
   * Answer this many calls first with 429 (headers retry-after: `retryAfterSeconds`, default 1, and
   * retry-after-ms, which the SDKs prefer) before serving; or a function deciding per call, given the
   * call's 0-based number among all calls to the route.
   */
  rateLimit?: { count: number; retryAfterSeconds?: number } | ((n: number) => boolean);
}

/** A provider's API on 127.0.0.1, speaking its documented streaming wire format. */
export interface Upstream {
  /** http://127.0.0.1:PORT */
  url: string;
  /** Every request received, 429'd ones included. */
  calls: UpstreamCall[];
  /** How many got 429. */
  rateLimited: number;
  close(): Promise<void>;
}

type Usage = Required<NonNullable<UpstreamAnswer["usage"]>>;

/** A call to answer: where to write, what to write, and when the client went away. */
interface Serving {
  write: (chunk: string) => Promise<void>;
  res: ServerResponse;
  answer: UpstreamAnswer & { usage: Usage };
  model: string;
  n: number;
  signal: AbortSignal;
}

/** The parts in which two providers' APIs differ. */
interface Dialect {
  path: string;
  error(kind: "rate_limit" | "not_found" | "invalid_request", message: string): object;
  serve(serving: Serving, body: unknown): Promise<void>;
}

/** Anthropic Messages: POST /v1/messages, answered as an SSE stream by `writeMessagesStream`. */
export function startAnthropicUpstream(options: UpstreamOptions = {}): Promise<Upstream> {
  return startUpstream(options, {
    path: "/v1/messages",
    // https://docs.anthropic.com/en/api/errors
    error: (kind, message) => ({ type: "error", error: { type: `${kind}_error`, message } }),
    serve: async ({ write, res, answer, model, n, signal }) => {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "request-id": `req_upstream_${n}`,
      });
      await writeMessagesStream(write, answer.reply, {
        model,
        messageId: `msg_upstream_${n}`,
        inputTokens: answer.usage.input,
        outputTokens: answer.usage.output,
        cacheReadTokens: answer.usage.cacheRead,
        cacheWriteTokens: answer.usage.cacheWrite,
        delayMs: answer.delayMs,
        signal,
      });
    },
  });
}

/**
 * OpenAI Chat Completions: POST /v1/chat/completions, answered as chunks of `delta.content` or
 * `delta.tool_calls`, a finish_reason, the usage chunk when `stream_options.include_usage`, then [DONE].
 * Cached tokens count inside prompt_tokens, as OpenAI reports them; cache writes, which OpenAI never
 * reports, go in `prompt_tokens_details.cache_write_tokens` and inside `cached_tokens` (OpenRouter's
 * convention, which pi-ai undoes), so every usage field reaches the client.
 */
export function startOpenAIChatUpstream(options: UpstreamOptions = {}): Promise<Upstream> {
  return startUpstream(options, {
    path: "/v1/chat/completions",
    error: (kind, message) =>
      kind === "rate_limit"
        ? { error: { message, type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } }
        : {
            error: {
              message,
              type: "invalid_request_error",
              param: null,
              code: kind === "not_found" ? "not_found" : null,
            },
          },
    serve: async ({ write, res, answer, model, n, signal }, body) => {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-request-id": `req_upstream_${n}`,
      });
      const includeUsage =
        isRecord(body) && isRecord(body.stream_options) && body.stream_options.include_usage === true;
      const base = {
        id: `chatcmpl-upstream-${n}`,
        object: "chat.completion.chunk",
        created: Math.floor(Date.now() / 1000),
        model,
      };
      const chunk = (delta: object, finishReason: string | null = null) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
      const deltas = chatDeltas(answer.reply);
      const pause = answer.delayMs ? answer.delayMs / deltas.length : 0;
      await write(chunk({ role: "assistant", content: "text" in answer.reply ? "" : null }));
      for (const delta of deltas) {
        if (pause > 0) await sleep(pause);
        signal.throwIfAborted();
        await write(chunk(delta));
      }
      await write(chunk({}, "text" in answer.reply ? "stop" : "tool_calls"));
      if (includeUsage) {
        const { input, output, cacheRead, cacheWrite } = answer.usage;
        const details =
          cacheWrite > 0
            ? { cached_tokens: cacheRead + cacheWrite, cache_write_tokens: cacheWrite }
            : { cached_tokens: cacheRead };
        const prompt = input + cacheRead + cacheWrite;
        const usage = {
          prompt_tokens: prompt,
          completion_tokens: output,
          total_tokens: prompt + output,
          prompt_tokens_details: details,
        };
        await write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      }
      await write("data: [DONE]\n\n");
    },
  });
}

async function startUpstream(options: UpstreamOptions, dialect: Dialect): Promise<Upstream> {
  const answerOf = options.answer ?? (() => ({ reply: { text: "ok" } }));
  const limit = options.rateLimit;
  const retryAfterSeconds = typeof limit === "object" ? (limit.retryAfterSeconds ?? 1) : 1;
  const limited = typeof limit === "function" ? limit : (n: number) => n < (limit?.count ?? 0);
  let routed = 0;
  let answered = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req);
    const parsed = parseJson(text);
    const body = parsed ? parsed.json : text;
    const path = new URL(req.url ?? "/", "http://upstream").pathname;
    upstream.calls.push({ method: req.method ?? "", path, headers: { ...req.headers }, body });
    const reject = (status: number, headers: Record<string, string>, error: object) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(error));
    };
    if (req.method !== "POST" || path !== dialect.path)
      return reject(404, {}, dialect.error("not_found", `Not found: ${req.method} ${path}`));
    if (limited(routed++)) {
      upstream.rateLimited++;
      const retry = {
        "retry-after": String(Math.ceil(retryAfterSeconds)),
        "retry-after-ms": String(retryAfterSeconds * 1000),
      };
      return reject(429, retry, dialect.error("rate_limit", "Rate limited by the test upstream."));
    }
    if (!parsed) return reject(400, {}, dialect.error("invalid_request", "The body is not JSON."));
    const n = answered++;
    const answer = answerOf(body, n);
    const aborted = new AbortController();
    res.on("close", () => aborted.abort(new Error("client went away")));
    const write = (chunk: string) =>
      new Promise<void>((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())));
    const model = isRecord(body) && typeof body.model === "string" ? body.model : "unknown";
    await dialect.serve(
      { write, res, answer: { ...answer, usage: usageOf(answer, body) }, model, n, signal: aborted.signal },
      body,
    );
    res.end();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const upstream: Upstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: [],
    rateLimited: 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return upstream;
}

/** The answer's usage with absent counts derived from sizes: input from the prompt, output from the reply. */
function usageOf(answer: UpstreamAnswer, body: unknown): Usage {
  const replyChars = "text" in answer.reply ? answer.reply.text.length : JSON.stringify(answer.reply.toolCalls).length;
  return {
    input: answer.usage?.input ?? tokensOf(messagesRequestFacts(body).promptChars),
    output: answer.usage?.output ?? tokensOf(replyChars),
    cacheRead: answer.usage?.cacheRead ?? 0,
    cacheWrite: answer.usage?.cacheWrite ?? 0,
  };
}

/** Chat Completions deltas: the text at once, or per tool call its opening (id, name) then its arguments. */
function chatDeltas(reply: ScriptedReply): object[] {
  if ("text" in reply) return [{ content: reply.text }];
  return reply.toolCalls.flatMap((call, index) => [
    { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] },
    { tool_calls: [{ index, function: { arguments: JSON.stringify(call.input) } }] },
  ]);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function parseJson(text: string): { json: unknown } | undefined {
  try {
    return { json: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
