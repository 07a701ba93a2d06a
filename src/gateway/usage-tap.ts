/** The wire APIs whose response bodies a tap can read usage from. */
export type TappedApi = "anthropic-messages" | "openai-completions" | "openai-responses";
export const TAPPED_APIS: readonly TappedApi[] = ["anthropic-messages", "openai-completions", "openai-responses"];

export function isTappedApi(api: string): api is TappedApi {
  return (TAPPED_APIS as readonly string[]).includes(api);
}

/** Token counts of one model call, as pi-ai counts them. */
export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * Reads the token usage out of a provider's response body while the gateway streams it on
 * unchanged. The body may come from a bad server or through a hostile sandbox: a tap never throws,
 * holds at most one 1 MiB SSE line plus one 1 MiB event (or a 16 MiB JSON body), and counts any
 * number that is not a non-negative safe integer as 0.
 */
export interface UsageTap {
  /** Feed the next bytes of the response body, in order (chunks split anywhere, even inside a UTF-8 character or a line). Never throws. */
  push(chunk: Uint8Array): void;
  /** The counts the body carried so far; null when it carried none (a server that sends no usage). Call after the body ended (also valid mid-stream). */
  result(): TokenCounts | null;
}

/** contentType: the response's content-type header; `text/event-stream` → SSE parsing, otherwise the whole body is one JSON document. */
export function createUsageTap(api: TappedApi, contentType: string | undefined): UsageTap {
  const dialect = DIALECTS[api];
  const isSse = contentType?.split(";")[0]?.trim().toLowerCase() === "text/event-stream";
  return isSse ? new SseTap(dialect) : new JsonTap(dialect);
}

const MAX_LINE_BYTES = 1 << 20;
const MAX_EVENT_CHARS = 1 << 20;
const MAX_JSON_BYTES = 16 << 20;
const KEPT_BYTES = 64 << 10;
const LF = 0x0a;
const CR = 0x0d;

type Json = Record<string, unknown>;

/**
 * How one wire API carries usage, each formula copied from pi-ai 0.73.1 (the file named on each
 * dialect), with hostile values counted as 0 instead of being passed through.
 */
interface Dialect {
  /** Folds one SSE event (its `event:` name and parsed `data:`) into the counts so far. */
  event(counts: TokenCounts | null, name: string | null, data: unknown): TokenCounts | null;
  /** The counts of a whole non-streamed response. */
  body(body: unknown): TokenCounts | null;
}

const asObject = (value: unknown): Json | undefined =>
  typeof value === "object" && value !== null ? (value as Json) : undefined;
const count = (value: unknown): number =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0;
const ZERO: TokenCounts = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** Anthropic Messages (providers/anthropic.js): message_start sets all four, message_delta overrides the fields it carries. */
const ANTHROPIC_EVENTS = new Set([
  "message_start",
  "message_delta",
  "message_stop",
  "content_block_start",
  "content_block_delta",
  "content_block_stop",
]);
const anthropicUsage = (usage: Json): TokenCounts => ({
  input: count(usage.input_tokens),
  output: count(usage.output_tokens),
  cacheRead: count(usage.cache_read_input_tokens),
  cacheWrite: count(usage.cache_creation_input_tokens),
});
// pi keeps a count when message_delta leaves it out or sends null (proxies drop input_tokens there).
const override = (previous: number, value: unknown): number =>
  value === null || value === undefined ? previous : count(value);
const anthropic: Dialect = {
  event(counts, name, data) {
    // pi only reads events whose SSE name is one of the Messages events, whatever the data says.
    if (!ANTHROPIC_EVENTS.has(name ?? "")) return counts;
    const event = asObject(data);
    if (event?.type === "message_start") {
      const usage = asObject(asObject(event.message)?.usage);
      return usage ? anthropicUsage(usage) : counts;
    }
    const usage = event?.type === "message_delta" ? asObject(event.usage) : undefined;
    if (!usage) return counts;
    const base = counts ?? ZERO;
    return {
      input: override(base.input, usage.input_tokens),
      output: override(base.output, usage.output_tokens),
      cacheRead: override(base.cacheRead, usage.cache_read_input_tokens),
      cacheWrite: override(base.cacheWrite, usage.cache_creation_input_tokens),
    };
  },
  body(body) {
    const usage = asObject(asObject(body)?.usage);
    return usage ? anthropicUsage(usage) : null;
  },
};

/** OpenAI Chat Completions (providers/openai-completions.js, parseChunkUsage): the latest usage wins. */
const completionsUsage = (usage: Json): TokenCounts => {
  const details = asObject(usage.prompt_tokens_details);
  const reportedCached = count(details?.cached_tokens ?? usage.prompt_cache_hit_tokens);
  const cacheWrite = count(details?.cache_write_tokens);
  // Some providers (OpenRouter) count this call's cache writes inside cached_tokens.
  const cacheRead = cacheWrite > 0 ? Math.max(0, reportedCached - cacheWrite) : reportedCached;
  return {
    input: Math.max(0, count(usage.prompt_tokens) - cacheRead - cacheWrite),
    // completion_tokens already includes reasoning tokens.
    output: count(usage.completion_tokens),
    cacheRead,
    cacheWrite,
  };
};
const completionUsageOf = (chunk: Json | undefined): Json | undefined => {
  const choice = Array.isArray(chunk?.choices) ? asObject(chunk.choices[0]) : undefined;
  // Some providers (Moonshot) put usage on the choice instead of the chunk.
  return asObject(chunk?.usage) ?? asObject(choice?.usage);
};
const completions: Dialect = {
  event(counts, _name, data) {
    const usage = completionUsageOf(asObject(data));
    return usage ? completionsUsage(usage) : counts;
  },
  body(body) {
    const usage = completionUsageOf(asObject(body));
    return usage ? completionsUsage(usage) : null;
  },
};

/** OpenAI Responses (providers/openai-responses-shared.js): input_tokens includes the cached ones. */
const responsesUsage = (usage: Json): TokenCounts => {
  const cached = count(asObject(usage.input_tokens_details)?.cached_tokens);
  // pi subtracts without a floor; only a lying server could make it negative.
  return {
    input: Math.max(0, count(usage.input_tokens) - cached),
    output: count(usage.output_tokens),
    cacheRead: cached,
    cacheWrite: 0,
  };
};
// pi reads only response.completed; a truncated or failed response is billed too, so its usage counts here.
const FINAL_RESPONSE_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"]);
const responses: Dialect = {
  event(counts, _name, data) {
    const event = asObject(data);
    if (typeof event?.type !== "string" || !FINAL_RESPONSE_EVENTS.has(event.type)) return counts;
    const usage = asObject(asObject(event.response)?.usage);
    return usage ? responsesUsage(usage) : counts;
  },
  body(body) {
    const usage = asObject(asObject(body)?.usage);
    return usage ? responsesUsage(usage) : null;
  },
};

const DIALECTS: Record<TappedApi, Dialect> = {
  "anthropic-messages": anthropic,
  "openai-completions": completions,
  "openai-responses": responses,
};

const decoder = new TextDecoder();

/** A byte buffer that grows by doubling up to a cap; an append past the cap is refused and empties it. */
class CappedBytes {
  private bytes = new Uint8Array(0);
  private used = 0;
  constructor(private readonly cap: number) {}

  get length(): number {
    return this.used;
  }

  /** Appends `chunk`, or returns false (and drops everything held) when that would pass the cap. */
  append(chunk: Uint8Array): boolean {
    const needed = this.used + chunk.length;
    if (needed > this.cap) {
      this.clear();
      return false;
    }
    if (needed > this.bytes.length) {
      const grown = new Uint8Array(Math.min(this.cap, Math.max(needed, this.bytes.length * 2, 4096)));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    this.bytes.set(chunk, this.used);
    this.used = needed;
    return true;
  }

  text(): string {
    return decoder.decode(this.bytes.subarray(0, this.used));
  }

  /** Empties the buffer; a small allocation is kept for the next line, a large one let go. */
  clear(): void {
    if (this.bytes.length > KEPT_BYTES) this.bytes = new Uint8Array(0);
    this.used = 0;
  }
}

/** The fields of the SSE event being read; `dropped` once any of its lines or its data passed the cap. */
interface PendingEvent {
  name: string | null;
  data: string[];
  chars: number;
  dropped: boolean;
}
const freshEvent = (): PendingEvent => ({ name: null, data: [], chars: 0, dropped: false });

/** Applies one non-blank SSE line to `event`, parsed the way pi's and OpenAI's SSE decoders do. */
function addField(event: PendingEvent, line: string): void {
  if (line.startsWith(":")) return;
  const colon = line.indexOf(":");
  const field = colon === -1 ? line : line.slice(0, colon);
  let value = colon === -1 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (field === "event") event.name = value;
  if (field !== "data" || event.dropped) return;
  event.chars += value.length + 1;
  if (event.chars > MAX_EVENT_CHARS) {
    event.dropped = true;
    event.data = [];
  } else {
    event.data.push(value);
  }
}

/**
 * SSE: lines end at `\r\n`, `\n` or `\r`; a blank line ends an event, whose `data:` lines are
 * joined with `\n`. Lines split only at ASCII bytes, so a line's bytes are always whole UTF-8.
 */
class SseTap implements UsageTap {
  private counts: TokenCounts | null = null;
  /** Set by `data: [DONE]`, after which OpenAI's SDK reads nothing more. */
  private done = false;
  private event = freshEvent();
  private readonly line = new CappedBytes(MAX_LINE_BYTES);
  private lineDropped = false;
  private afterCr = false;

  constructor(private readonly dialect: Dialect) {}

  push(chunk: Uint8Array): void {
    let start = 0;
    while (start < chunk.length && !this.done) {
      if (this.afterCr) {
        this.afterCr = false;
        if (chunk[start] === LF) {
          start++;
          continue;
        }
      }
      let end = start;
      while (end < chunk.length && chunk[end] !== LF && chunk[end] !== CR) end++;
      if (!this.lineDropped && !this.line.append(chunk.subarray(start, end))) this.lineDropped = true;
      if (end === chunk.length) return;
      this.endLine();
      this.afterCr = chunk[end] === CR;
      start = end + 1;
    }
  }

  result(): TokenCounts | null {
    if (this.done) return this.counts;
    // The body may end without the blank line that closes its last event; pi still reads that event.
    const event = { ...this.event, data: [...this.event.data] };
    if (this.lineDropped) event.dropped = true;
    else if (this.line.length > 0) addField(event, this.line.text());
    return this.fold(event);
  }

  private endLine(): void {
    const dropped = this.lineDropped;
    const text = dropped ? "" : this.line.text();
    this.line.clear();
    this.lineDropped = false;
    if (dropped) {
      this.event.dropped = true;
    } else if (text !== "") {
      addField(this.event, text);
    } else {
      if (!this.event.dropped && this.event.data[0]?.startsWith("[DONE]")) this.done = true;
      else this.counts = this.fold(this.event);
      this.event = freshEvent();
    }
  }

  private fold(event: PendingEvent): TokenCounts | null {
    if (event.dropped || event.data.length === 0) return this.counts;
    let data: unknown;
    try {
      data = JSON.parse(event.data.join("\n"));
    } catch {
      return this.counts;
    }
    return this.dialect.event(this.counts, event.name, data);
  }
}

/** A non-streamed response: the whole body is one JSON document, parsed when asked. */
class JsonTap implements UsageTap {
  private readonly body = new CappedBytes(MAX_JSON_BYTES);
  private tooLarge = false;
  private parsed: { length: number; counts: TokenCounts | null } | undefined;

  constructor(private readonly dialect: Dialect) {}

  push(chunk: Uint8Array): void {
    if (!this.tooLarge && !this.body.append(chunk)) this.tooLarge = true;
  }

  result(): TokenCounts | null {
    if (this.tooLarge) return null;
    if (this.parsed?.length !== this.body.length) {
      let counts: TokenCounts | null = null;
      try {
        counts = this.dialect.body(JSON.parse(this.body.text()));
      } catch {
        // Not (yet) a whole JSON document: it carried no usage.
      }
      this.parsed = { length: this.body.length, counts };
    }
    return this.parsed.counts;
  }
}
