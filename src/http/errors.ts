import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ERROR_CODES, type ErrorCode, isSwarmError } from "../errors.ts";

/**
 * The one map from error codes to HTTP statuses. Codes not listed are server faults (500).
 * Partial on purpose: a code added elsewhere must not break this file, it just answers 500.
 */
const STATUS: Partial<Record<ErrorCode, number>> = {
  INVALID_BODY: 400,
  INVALID_QUERY: 400,
  UNAUTHORIZED: 401,
  HOST_NOT_ALLOWED: 403,
  ORIGIN_NOT_ALLOWED: 403,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  NOT_FOUND: 404,
  RUN_NOT_FOUND: 404,
  AGENT_NOT_FOUND: 404,
  AGENT_NOT_LIVE: 409,
  AGENT_NOT_PAUSED: 409,
  AGENT_DRAINING: 409,
  PERMISSION_NOT_FOUND: 404,
  PERMISSION_RESOLVED: 409,
  BUDGET_EXCEEDS_PARENT: 409,
  AGENT_BUSY: 409,
  NOT_A_FORK: 409,
  ADOPT_CONFLICT: 409,
  DISK_LIMIT: 409,
  TREE_TOO_LARGE: 409,
  MCP_SESSION_NOT_FOUND: 404,
  MCP_SESSION_BUSY: 429,
  MCP_SESSIONS_FULL: 503,
  BODY_TOO_LARGE: 413,
  HARNESS_REJECTED: 502,
  HARNESS_TIMEOUT: 502,
  HARNESS_UNREACHABLE: 502,
  SANDBOX_FREEZE_FAILED: 502,
  SANDBOX_THAW_FAILED: 502,
  SNAPSHOT_FAILED: 502,
  RUNTIME_UNAVAILABLE: 503,
  STORAGE_FULL: 507,
  CONSOLE_NOT_BUILT: 503,
};

/** The 413's words: the limit the request went over, and the setting that chose it. */
function tooLarge(request: FastifyRequest): string {
  const limit = request.routeOptions.bodyLimit;
  if (limit === undefined) return ERROR_CODES.BODY_TOO_LARGE;
  const mib = limit / (1024 * 1024);
  const size = Number.isInteger(mib) ? ` (${mib} MiB)` : "";
  return `The request body is over the limit of ${limit} bytes${size}; the daemon's SWARM_BODY_LIMIT sets it.`;
}

/**
 * Fastify's own request errors, given swarmd's codes and wording. Other 4xx FST_ errors (a bad URL,
 * a Content-Length mismatch) keep fastify's status and message.
 */
const FASTIFY_CODES: Record<
  string,
  { code: ErrorCode; message: string | ((request: FastifyRequest) => string) } | { status: number; message: string }
> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: "BODY_TOO_LARGE", message: tooLarge },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: "INVALID_BODY", message: "body: is not valid JSON" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: "INVALID_BODY", message: "body: must not be empty" },
  // No swarmd code: only fastify's parser can refuse a media type.
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    message: "Unsupported Media Type: request bodies must be application/json.",
  },
};

interface HttpError {
  statusCode: number;
  message: string;
}

function statusForCode(code: ErrorCode): number {
  return STATUS[code] ?? 500;
}

/** Status and public message for anything thrown while serving a request. */
function toHttpError(err: unknown, request: FastifyRequest): HttpError {
  if (isSwarmError(err)) return { statusCode: statusForCode(err.code), message: err.message };
  if (isFastifyError(err)) {
    const known = FASTIFY_CODES[err.code];
    if (known)
      return {
        statusCode: "code" in known ? statusForCode(known.code) : known.status,
        message: typeof known.message === "string" ? known.message : known.message(request),
      };
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) return { statusCode: status, message: err.message };
  }
  // Unexpected faults never leak their text: it may hold paths or internals.
  return { statusCode: 500, message: ERROR_CODES.INTERNAL };
}

function isFastifyError(err: unknown): err is FastifyError {
  return err instanceof Error && "code" in err && typeof err.code === "string" && err.code.startsWith("FST_");
}

/** Send `{"error": message}` with the mapped status. The only place error bodies are built. */
export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { statusCode, message } = toHttpError(err, request);
  if (statusCode >= 500) request.log.error({ err }, "request failed");
  else request.log.info({ statusCode, message }, "request refused");
  if (statusCode === 401) reply.header("www-authenticate", "Bearer");
  return reply.code(statusCode).type("application/json; charset=utf-8").send({ error: message });
}

/**
 * Node's own refusals of bytes it cannot parse as an HTTP request (a bad request line, method or
 * header, a head over its size limit, a head that never finished) never reach routing, so
 * `sendError` cannot answer them; fastify's default answer adds `message` and `statusCode` keys.
 * The same `{"error": message}` as every other refusal, written on the raw socket.
 */
export function sendClientError(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "The request line and headers are too large."]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "The request did not arrive in time."]
        : [400, "The request is not valid HTTP."];
  const body = JSON.stringify({ error: message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
