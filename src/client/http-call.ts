import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { ServiceError, ServiceUnreachableError } from "./client-errors.ts";
import type { Endpoint } from "./endpoint.ts";

export interface HttpCall {
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: unknown;
  /**
   * Whole-call limit. Callers that ask the service to hold a request (result `wait`, spawns with
   * `waitFor`) pass one longer than that hold; node:http has no hidden limit of its own below it.
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
 * One JSON request to swarmd. Resolves with any 2xx answer; an error status rejects with
 * `ServiceError` carrying the service's `{"error"}` message; no answer rejects with
 * `ServiceUnreachableError` naming the address and where it was configured.
 */
export function httpCall(endpoint: Endpoint, call: HttpCall): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const res = (response: IncomingMessage) => {
      readBody(response).then((text) => {
        clearTimeout(timer);
        const status = response.statusCode ?? 0;
        const body = parseJson(text);
        if (status >= 200 && status < 300) resolve({ status, body });
        else reject(new ServiceError(status, errorText(status, body, text), call));
      }, fail);
    };
    const req = openRequest(endpoint, call, res);
    // Once timed out, whichever of request or response reports the cut first, it is a timeout.
    let timedOut = false;
    const fail = (err: unknown) => {
      clearTimeout(timer);
      reject(toTransportError(endpoint, timedOut ? new TimeoutError(call.timeoutMs) : err, call.signal));
    };
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new TimeoutError(call.timeoutMs));
    }, call.timeoutMs);
    req.on("error", fail);
    if (call.signal) {
      if (call.signal.aborted) req.destroy(call.signal.reason as Error);
      else call.signal.addEventListener("abort", () => req.destroy(call.signal?.reason as Error), { once: true });
    }
    if (call.body !== undefined) req.write(JSON.stringify(call.body));
    req.end();
  });
}

/** Starts a request with the endpoint's address and token; shared with the event stream. */
export function openRequest(
  endpoint: Endpoint,
  call: Omit<HttpCall, "timeoutMs">,
  onResponse: (res: IncomingMessage) => void,
) {
  const url = new URL(`${endpoint.url}${call.path}`);
  const headers: Record<string, string> = { accept: "application/json", ...call.headers };
  if (call.body !== undefined) headers["content-type"] = "application/json";
  if (endpoint.token) headers.authorization = `Bearer ${endpoint.token}`;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return send(url, { method: call.method, headers }, onResponse);
}

export function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => (text += chunk));
    res.on("end", () => resolve(text));
    res.on("error", reject);
    res.on("aborted", () => reject(new Error("the response was cut off")));
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

class TimeoutError extends Error {
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
