import { type Dispatcher, request } from "undici";
import { ServiceError, ServiceUnreachableError } from "./client-errors.ts";
import type { Endpoint } from "./endpoint.ts";

export interface HttpCall {
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: unknown;
  /**
   * Whole-call limit. Callers that ask the service to hold a request (result `wait`, spawns with
   * `waitFor`) pass one longer than that hold; undici's own header and body timeouts are turned
   * off, so no hidden limit cuts below it.
   */
  timeoutMs: number;
  headers?: Record<string, string>;
  /** Cancels the call; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface HttpReply {
  status: number;
  /** Parsed JSON, or `undefined` for an empty body. */
  body: unknown;
}

/**
 * One JSON request to swarmd, on undici. Resolves with any 2xx answer; an error status rejects
 * with `ServiceError` carrying the service's `{"error"}` message; no answer rejects with
 * `ServiceUnreachableError` naming the address and where it was configured.
 */
export async function httpCall(endpoint: Endpoint, call: HttpCall): Promise<HttpReply> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new TimeoutError(call.timeoutMs)), call.timeoutMs);
  const signal = call.signal ? AbortSignal.any([call.signal, timeout.signal]) : timeout.signal;
  try {
    const response = await openRequest(endpoint, { ...call, signal });
    const text = await response.body.text();
    const body = parseJson(text);
    if (response.statusCode >= 200 && response.statusCode < 300) return { status: response.statusCode, body };
    throw new ServiceError(response.statusCode, errorText(response.statusCode, body, text), call);
  } catch (err) {
    // Once timed out, whichever step reports the cut, it is a timeout.
    throw toTransportError(endpoint, timeout.signal.aborted ? timeout.signal.reason : err, call.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts a request with the endpoint's address and token; shared with the event stream. */
export function openRequest(endpoint: Endpoint, call: Omit<HttpCall, "timeoutMs">): Promise<Dispatcher.ResponseData> {
  const headers: Record<string, string> = { accept: "application/json", ...call.headers };
  if (call.body !== undefined) headers["content-type"] = "application/json";
  if (endpoint.token) headers.authorization = `Bearer ${endpoint.token}`;
  return request(`${endpoint.url}${call.path}`, {
    method: call.method,
    headers,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
    signal: call.signal,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
}

/** The service's `{"error": message}`, else the raw text, else the bare status. */
export function errorText(status: number, body: unknown, text: string): string {
  if (typeof body === "object" && body !== null && "error" in body && typeof body.error === "string") return body.error;
  return text.trim() || `HTTP ${status}`;
}

/** Parsed JSON, the raw text when it is not JSON, or `undefined` for an empty body. */
export function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export class TimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${Math.round(ms / 1000)} s`);
  }
}

/** A cancelled call keeps its own reason; everything else below HTTP is "unreachable". */
export function toTransportError(endpoint: Endpoint, err: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  if (err instanceof ServiceError || err instanceof ServiceUnreachableError) return err;
  const where = `swarmd at ${endpoint.url} (${endpoint.source})`;
  if (err instanceof TimeoutError) {
    return new ServiceUnreachableError(endpoint.url, "timeout", `${where} did not answer: ${err.message}.`, {
      cause: err,
    });
  }
  const code = (err as { code?: unknown } | null)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  const hint = "Start it (`swarmd`, `make run`, or the swarm_start_service tool) or set SWARM_URL to where it listens.";
  return new ServiceUnreachableError(
    endpoint.url,
    "unreachable",
    `Cannot reach ${where}: ${typeof code === "string" ? code : detail}. ${hint}`,
    { cause: err },
  );
}
