import type { IncomingHttpHeaders } from "node:http";
import { Agent, request, type Dispatcher } from "undici";
import type { Credentials, GatewayModel } from "./models.ts";

/** Headers of the agent's request that never go upstream: the connection's own, and any credential the agent sent. */
const DROPPED = new Set(["host", "connection", "keep-alive", "content-length", "transfer-encoding", "te", "upgrade", "authorization", "proxy-authorization", "x-api-key", "cookie", "accept-encoding"]);

/** The daemon's own connections to providers: never the process's global dispatcher (harnesses in this process route theirs). */
export const upstreamDispatcher = new Agent({ headersTimeout: 600_000, bodyTimeout: 300_000 });

/**
 * The request to send upstream: the agent's headers without credentials, the provider's headers
 * and key added (Anthropic takes `x-api-key`, or a Bearer token for an OAuth token; OpenAI-style
 * APIs a Bearer token). `accept-encoding` is dropped so the body arrives as plain bytes to meter.
 */
export function upstreamHeaders(incoming: IncomingHttpHeaders, model: GatewayModel, credentials: Credentials): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || DROPPED.has(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  const key = credentials.apiKey;
  if (key) {
    if (model.api === "anthropic-messages" && !key.includes("sk-ant-oat")) headers["x-api-key"] = key;
    else headers.authorization = `Bearer ${key}`;
  }
  for (const [name, value] of Object.entries(credentials.headers ?? {})) headers[name.toLowerCase()] = value;
  return headers;
}

/** Send one call to the provider; the answer's body is read by the caller. */
export function sendUpstream(url: string, headers: Record<string, string>, body: Buffer, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
  return request(url, { method: "POST", headers: { ...headers, "content-length": String(body.length) }, body, dispatcher: upstreamDispatcher, signal });
}

/** Response headers passed back to the agent: the provider's, less those about this connection. */
export function downstreamHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === "connection" || name === "keep-alive" || name === "transfer-encoding" || name === "content-length") continue;
    out[name] = value;
  }
  return out;
}
