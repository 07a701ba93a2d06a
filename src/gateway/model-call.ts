import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { finished } from "node:stream/promises";
import type { Dispatcher } from "undici";
import { errorMessage } from "../errors.ts";
import { callUsage } from "./call-usage.ts";
import type { CarriedApi } from "./gateway-model.ts";
import { gatewayError, writeOut } from "./gateway-reply.ts";
import { gatewayBaseUrl } from "./harness-model.ts";
import type { ModelCaller } from "./model-caller.ts";
import type { ModelCatalog } from "./models.ts";
import { type Pacing, retryAfterMs } from "./pacing.ts";
import { serveScriptStep } from "./scripted-upstream.ts";
import { downstreamHeaders, sendUpstream, upstreamHeaders } from "./upstream.ts";
import { createUsageTap, type TokenCounts } from "./usage-tap.ts";

/** The one path each API's calls take, after the provider's base URL. */
const API_PATHS: Record<CarriedApi, string> = {
  "anthropic-messages": "/v1/messages",
  "openai-completions": "/chat/completions",
  "openai-responses": "/responses",
};
/** Answers that mean "too busy, later": held and retried by the gateway, never passed to the agent until it gives up. */
const LOAD_STATUSES = new Set([429, 503, 529]);
const MAX_LOAD_RETRIES = 12;
const BODY_LIMIT = 32 * 1024 * 1024;

export interface ModelCallDeps {
  catalog: ModelCatalog;
  pacing: Pacing;
  /** Aborted when the daemon shuts down: what is still in flight is cut. */
  closing: AbortSignal;
}

/**
 * One model call from an agent's harness. Only the agent's own model is reachable, on its API's
 * one path, with the request's `model` pinned to it. The call waits for the agent's budgets and
 * the provider's pacing (held time, not quiet time), then goes upstream with the daemon's key, or
 * to the scripted upstream. Once sent, a call always completes and counts, even when the agent
 * stops listening; its usage is durable before its last byte reaches the agent.
 */
export async function handleModelCall(
  req: IncomingMessage,
  res: ServerResponse,
  caller: ModelCaller,
  deps: ModelCallDeps,
): Promise<void> {
  const model = caller.model;
  // What the gateway itself refuses is recorded for the agent (a provider's own answers are not).
  const refuse = (status: number, message: string) => {
    caller.refused(message);
    gatewayError(res, status, message);
  };
  // The agent hung up (stopped, aborted, or gave up): a call not yet sent is dropped.
  const hungUp = new AbortController();
  res.on("close", () => hungUp.abort(new Error("the agent closed the call")));
  const path = new URL(req.url ?? "/", "http://gateway").pathname;
  const prefix = new URL(gatewayBaseUrl(model.baseUrl)).pathname;
  if (req.method !== "POST" || path !== prefix + API_PATHS[model.api]) {
    return refuse(
      404,
      `the gateway carries only POST ${prefix + API_PATHS[model.api]} for ${model.provider}/${model.id}, not ${req.method} ${path}`,
    );
  }
  const raw = await readBody(req).catch(() => null);
  if (raw === null) return void res.destroy(); // the request broke off
  if (raw === undefined) return refuse(413, `a model request may be at most ${BODY_LIMIT} bytes`);
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(raw.toString("utf8"));
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object");
    body = parsed as Record<string, unknown>;
  } catch (err) {
    return refuse(400, `the model request is not a JSON object: ${errorMessage(err)}`);
  }
  body.model = model.id; // the agent's model, never one it names itself
  const callId = randomUUID();
  const arrivedAt = Date.now();
  const scripted = caller.script !== undefined;

  for (let attempt = 0; ; attempt++) {
    let release = () => {};
    caller.holding(true);
    try {
      await caller.admit(hungUp.signal);
      if (!scripted) release = await deps.pacing.slot(model.provider, hungUp.signal);
    } catch {
      return; // the agent hung up while its call was held
    } finally {
      caller.holding(false);
    }
    const sentAt = Date.now();
    try {
      if (scripted) {
        const { counts, index } = await serveScriptStep(res, body, raw, caller, hungUp.signal);
        // A step cut off is answered again to the same request (see ScriptCursor): counted once, when delivered.
        if (hungUp.signal.aborted) return;
        await caller.record(callUsage(model, counts, callId, Date.now() - sentAt, sentAt - arrivedAt));
        res.end();
        // Delivered only once its last byte is with the operating system: a daemon killed before
        // that cuts the answer off, and the harness's retry of the same request must get this
        // step again, not the next (a mid that never spawned its leaves, seen in the chaos test).
        const sent = await finished(res).then(
          () => true,
          () => false,
        );
        if (sent) await caller.cursor.delivered(index);
        return;
      }
      const credentials = await deps.catalog.credentials(model).catch((err: unknown) => ({ error: errorMessage(err) }));
      if ("error" in credentials)
        return refuse(401, `swarmd has no credentials for ${model.provider}: ${credentials.error}`);
      if (!credentials.apiKey && !credentials.headers?.authorization && !credentials.headers?.Authorization) {
        return refuse(
          401,
          `swarmd has no API key for provider ${model.provider}: set it in the daemon's environment (as pi-ai names it, for example ANTHROPIC_API_KEY) or as apiKey in the models file (SWARM_MODELS)`,
        );
      }
      // The one query string an SDK sends (Anthropic's beta endpoints); nothing else the caller adds.
      const search = new URL(req.url ?? "/", "http://gateway").search === "?beta=true" ? "?beta=true" : "";
      const url = model.baseUrl.replace(/\/$/, "") + API_PATHS[model.api] + search;
      const upstream = await sendUpstream(
        url,
        upstreamHeaders(req.headers, model, credentials),
        Buffer.from(JSON.stringify(body)),
        deps.closing,
      ).catch((err: unknown) => err as Error);
      if (upstream instanceof Error)
        return refuse(502, `the gateway could not reach ${model.provider} at ${url}: ${errorMessage(upstream)}`);
      if (LOAD_STATUSES.has(upstream.statusCode) && attempt < MAX_LOAD_RETRIES) {
        deps.pacing.backOff(model.provider, retryAfterMs(upstream.headers));
        await upstream.body.dump().catch(() => undefined);
        if (hungUp.signal.aborted) return;
        continue;
      }
      if (upstream.statusCode < 400) deps.pacing.succeeded(model.provider);
      if (upstream.statusCode < 200 || upstream.statusCode >= 300)
        return await relayError(res, upstream, credentials.apiKey, LOAD_STATUSES.has(upstream.statusCode));
      const record = (counts: TokenCounts | null) =>
        caller.record(callUsage(model, counts, callId, Date.now() - sentAt, sentAt - arrivedAt));
      return await relayAnswer(res, upstream, model.api, record);
    } finally {
      release();
    }
  }
}

/**
 * A provider's answer, passed to the agent as it streams while the usage tap reads it; the usage is
 * recorded before the answer's end is sent. The agent not reading (frozen) or gone does not stop
 * the reading: the call completes and counts. An answer cut off upstream counts what was read.
 */
async function relayAnswer(
  res: ServerResponse,
  upstream: Dispatcher.ResponseData,
  api: CarriedApi,
  record: (counts: TokenCounts | null) => Promise<void>,
): Promise<void> {
  const contentType = upstream.headers["content-type"];
  const tap = createUsageTap(api, Array.isArray(contentType) ? contentType[0] : contentType);
  if (!res.destroyed) res.writeHead(upstream.statusCode, downstreamHeaders(upstream.headers));
  try {
    for await (const chunk of upstream.body) {
      tap.push(chunk as Buffer);
      await writeOut(res, chunk as Buffer);
    }
  } catch (err) {
    await record(tap.result()).catch(() => undefined);
    res.destroy(err as Error);
    return;
  }
  await record(tap.result());
  res.end();
}

/** Largest provider error body passed on to the agent. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * A provider's refusal, passed on to the agent whole (so pi reads its message), capped, and with
 * the daemon's key blanked should the provider quote it ("invalid key sk-…"): the agent's turn
 * error lands in events and results.
 */
async function relayError(
  res: ServerResponse,
  upstream: Dispatcher.ResponseData,
  apiKey: string | undefined,
  gaveUp: boolean,
): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of upstream.body) {
    if (size < ERROR_BODY_LIMIT) chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  let text = Buffer.concat(chunks).subarray(0, ERROR_BODY_LIMIT).toString("utf8");
  if (apiKey) text = text.replaceAll(apiKey, "[key]");
  const headers = downstreamHeaders(upstream.headers);
  delete headers["content-encoding"];
  // After the gateway's own retries of a busy provider, the SDK is not to add its own.
  if (gaveUp) headers["x-should-retry"] = "false";
  res.writeHead(upstream.statusCode, { ...headers, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** The request's body, or `undefined` past `BODY_LIMIT`; rejects when the request breaks off. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
