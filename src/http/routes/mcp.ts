import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { McpBody, McpProtocolVersionHeader, McpSessionIdHeader } from "../../api/mcp.ts";
import { SwarmError } from "../../errors.ts";
import { parseOrThrow } from "../../validation.ts";
import { asJson } from "../mcp/json-answer.ts";
import type { McpSessions } from "../mcp/mcp-sessions.ts";
import { originCheck } from "../origin-check.ts";

export interface McpRouteDeps {
  sessions: McpSessions;
  /** The names the Host check serves besides loopback: the Origin check takes the same. */
  allowedHosts?: readonly string[];
}

/**
 * `/mcp` (spec section 4.14, `src/api/mcp.ts`): the tool bridge on MCP's Streamable HTTP transport.
 * Each request passes the Host and token checks every route has, then the Origin check; the
 * daemon's own refusals (headers, body, sessions) go through its one error mapping, and what is
 * left goes to the session's transport, whose `Response` fastify sends.
 */
export function mcpRoutes(app: FastifyInstance, deps: McpRouteDeps): void {
  const onRequest = originCheck(deps.allowedHosts);

  app.post("/mcp", { onRequest }, async (request, reply) => {
    const stream = answerKind(request.headers.accept) === "stream";
    const { sessionId } = sessionHeaders(request);
    const body = parseOrThrow(McpBody, request.body, "body");
    const transportRequest = toTransport(request);
    const answer =
      sessionId === undefined
        ? await deps.sessions.initialize(transportRequest, initializeOnly(body), reply.raw)
        : await deps.sessions.find(sessionId).handle(transportRequest, body, reply.raw);
    return reply.send(stream ? answer : await asJson(answer));
  });

  app.delete("/mcp", { onRequest }, async (request, reply) => {
    const { sessionId } = sessionHeaders(request);
    if (sessionId === undefined) throw missingSession("DELETE");
    await deps.sessions.end(sessionId);
    return reply.code(200).send();
  });

  app.get("/mcp", { onRequest }, async (_request, reply) => {
    reply.header("allow", "POST, DELETE");
    throw new SwarmError(
      "METHOD_NOT_ALLOWED",
      "GET /mcp: the daemon offers no standalone MCP stream (it sends nothing unasked); POST requests, DELETE to end a session.",
    );
  });
}

/**
 * Whether the answer to a POST is a stream (an `Accept` that names `text/event-stream`, as MCP
 * clients send) or JSON (none, `*\/*`, `application/json`); anything else is a 406.
 */
function answerKind(accept: string | undefined): "stream" | "json" {
  const value = accept?.toLowerCase() ?? "";
  if (/\btext\/(event-stream|\*)/.test(value)) return "stream";
  if (value.trim() === "" || /\*\/\*|\bapplication\/(json|\*)/.test(value)) return "json";
  throw new SwarmError(
    "NOT_ACCEPTABLE",
    `Accept ${JSON.stringify(accept?.slice(0, 200))} takes neither application/json nor text/event-stream, which /mcp answers in.`,
  );
}

/** The session headers, each parsed with its schema when present. */
function sessionHeaders(request: FastifyRequest): { sessionId?: string } {
  const id = request.headers["mcp-session-id"];
  const version = request.headers["mcp-protocol-version"];
  if (version !== undefined)
    parseOrThrow(McpProtocolVersionHeader, version, "header.MCP-Protocol-Version", "INVALID_QUERY");
  return {
    sessionId:
      id === undefined ? undefined : parseOrThrow(McpSessionIdHeader, id, "header.Mcp-Session-Id", "INVALID_QUERY"),
  };
}

/** A request without a session must open one: one `initialize` request and nothing else. */
function initializeOnly(body: unknown): unknown {
  if (!isInitializeRequest(body)) throw missingSession("POST");
  return body;
}

function missingSession(method: string): SwarmError {
  return new SwarmError(
    "INVALID_QUERY",
    `header.Mcp-Session-Id: is required on ${method} /mcp but for an initialize request, which opens a session and answers its id.`,
  );
}

/**
 * The request as the transport takes it (a Web `Request`; the body, parsed by the daemon's own
 * parser, goes beside it). Credentials stay out of it: its headers reach the tools' `extra`.
 * `Accept` was settled above; the transport wants both types named.
 */
function toTransport(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || SKIPPED_HEADERS.has(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  headers.set("accept", "application/json, text/event-stream");
  return new Request(`http://${request.headers.host}${request.url}`, { method: request.method, headers });
}

const SKIPPED_HEADERS = new Set(["authorization", "cookie", "content-length", "transfer-encoding", "connection"]);
