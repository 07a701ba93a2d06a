import type { IncomingHttpHeaders } from "node:http";
import { Agent, type Dispatcher, request } from "undici";
import type { GatewayModel } from "./gateway-model.ts";
import type { Credentials } from "./models.ts";

/**
 * The only headers of the harness's request that go upstream: what pi-ai's provider clients send
 * to shape a call. Anything else (a credential, `openai-organization` to bill another account with
 * the daemon's key, `accept-encoding`, which would hide the body from the meter) stays here.
 */
const FORWARDED =
  /^(content-type|accept|user-agent|anthropic-version|anthropic-beta|anthropic-dangerous-direct-browser-access|openai-beta|x-stainless-[a-z0-9-]+)$/;

/** The daemon's own connections to providers: never the process's global dispatcher (harnesses in this process route theirs). */
export const upstreamDispatcher = new Agent({ headersTimeout: 600_000, bodyTimeout: 300_000 });

/**
 * The request to send upstream: the harness's shaping headers (`FORWARDED`), the provider's headers
 * and key added (Anthropic takes `x-api-key`, or a Bearer token for an OAuth token; OpenAI-style
 * APIs a Bearer token).
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  model: GatewayModel,
  credentials: Credentials,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || !FORWARDED.test(name)) continue;
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
export function sendUpstream(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  signal: AbortSignal,
): Promise<Dispatcher.ResponseData> {
  return request(url, {
    method: "POST",
    headers: { ...headers, "content-length": String(body.length) },
    body,
    dispatcher: upstreamDispatcher,
    signal,
  });
}

/** Response headers passed back to the agent: the provider's, less those about this connection. */
export function downstreamHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (
      value === undefined ||
      name === "connection" ||
      name === "keep-alive" ||
      name === "transfer-encoding" ||
      name === "content-length"
    )
      continue;
    out[name] = value;
  }
  return out;
}
