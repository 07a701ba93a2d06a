import { MAX_BATCH_SIZE } from "@modelcontextprotocol/sdk/server/requestBody.js";
import {
  JSONRPCMessageSchema,
  JSONRPCResponseSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { operation, requestBody } from "./operation.ts";

/**
 * The tool bridge over MCP's Streamable HTTP transport (spec section 4.14): `/mcp` takes JSON-RPC
 * messages as the MCP SDK declares them, in sessions named by `Mcp-Session-Id`. Its limits are
 * here so the document, the configuration and the session table say the same numbers.
 */

/** Sessions open at once by default (SWARM_MCP_MAX_SESSIONS). */
export const DEFAULT_MCP_MAX_SESSIONS = 64;
/** A session with nothing in flight for this long is closed, by default (SWARM_MCP_SESSION_IDLE_MS). */
export const DEFAULT_MCP_SESSION_IDLE_MS = 30 * 60_000;
/** Requests of one session whose answers are still open; one more is a 429. */
export const MCP_REQUESTS_PER_SESSION = 32;
/**
 * Requests of one session cancelled (by the client, or by leaving before the answer) after which
 * the session is closed: the SDK's transport keeps a small entry for each until its session ends.
 */
export const MCP_CANCELS_PER_SESSION = 1024;

/** One JSON-RPC message of MCP (the SDK's schema): a request, a notification or a response. */
export const McpMessageSchema = JSONRPCMessageSchema.describe(
  "One JSON-RPC 2.0 message of MCP: a request (`id`, `method`, `params`), a notification (`method`, `params`, no `id`) or a response (`id` and `result` or `error`).",
);

/** `POST /mcp`: one message, or a batch (MCP versions before 2025-06-18). */
export const McpBody = z
  .union([McpMessageSchema, z.array(McpMessageSchema).min(1).max(MAX_BATCH_SIZE)])
  .describe(`One JSON-RPC message, or a batch of 1..${MAX_BATCH_SIZE} (MCP versions before 2025-06-18).`);

/** A request's answer in JSON: the response to it, or those of a batch, in order. */
export const McpAnswerSchema = z
  .union([JSONRPCResponseSchema, z.array(JSONRPCResponseSchema)])
  .describe("The JSON-RPC response to the request (`result` or `error`), or the responses of a batch.");

/** The session a request belongs to: what the answer to `initialize` named. */
export const McpSessionIdHeader = z
  .string()
  .regex(/^[\x21-\x7e]{1,128}$/, "must be 1..128 visible ASCII characters")
  .describe("The session, as the answer to `initialize` named it.");

/** The MCP version the client and the daemon agreed in `initialize`. */
export const McpProtocolVersionHeader = z
  .enum(SUPPORTED_PROTOCOL_VERSIONS as [string, ...string[]], {
    error: `must be one of ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}`,
  })
  .describe(`The MCP version agreed in \`initialize\`: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}.`);

const SESSION_HEADERS = {
  "Mcp-Session-Id": {
    schema: McpSessionIdHeader,
    describe:
      "The session, from the answer to `initialize`; required on every request but `initialize`. An unknown one is a 404: initialize again.",
  },
  "MCP-Protocol-Version": {
    schema: McpProtocolVersionHeader,
    describe: `The MCP version agreed in \`initialize\` (${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}); absent: the one agreed.`,
  },
} as const;

const ORIGIN_REFUSAL =
  "An `Origin` header that is not the daemon's own: `http://`, a name the daemon serves (as for `Host`) and the port the request was sent to.";

const DESCRIPTION = [
  "The tool bridge of `swarm mcp` as an MCP server on the Streamable HTTP transport (spec section 4.14): the same route tools, made from the same table, less the bridge's local ones (starting a daemon, saved specs). Protocol versions " +
    `${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}.`,
  "Start a session with an `initialize` request; its answer carries `Mcp-Session-Id`, which every later request sends. A request whose `Accept` names `text/event-stream` (as MCP clients send it) is answered with a Server-Sent Events stream: progress notifications while a tool waits (when the request's `_meta` has a `progressToken`), then the response, and the stream ends. Any other request is answered with the response alone, in JSON (no `Accept`, `*/*` and `application/json` take it). There is no resumable stream and no event store: an answer whose connection drops is not replayed, and the call it answered is cancelled.",
  `At most \`SWARM_MCP_MAX_SESSIONS\` sessions (default ${DEFAULT_MCP_MAX_SESSIONS}) are open at once; a new one closes the least recently used with nothing in flight. A session with nothing in flight for \`SWARM_MCP_SESSION_IDLE_MS\` (default ${DEFAULT_MCP_SESSION_IDLE_MS / 60_000} minutes) is closed, as is one whose client cancelled ${MCP_CANCELS_PER_SESSION} requests. A closed session answers 404.`,
  'Refusals the daemon makes are `{"error"}` bodies like every route\'s; a second `initialize` on a session is refused by the MCP transport itself, with a JSON-RPC error body.',
].join("\n\n");

export const postMcp = operation({
  method: "post",
  path: "/mcp",
  operationId: "postMcp",
  tag: "mcp",
  summary: "Send MCP messages (Streamable HTTP)",
  description: DESCRIPTION,
  headers: SESSION_HEADERS,
  body: requestBody(McpBody, {
    initialize: {
      summary: "Start a session (its id comes back in `Mcp-Session-Id`)",
      value: {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: "docs", version: "1.0.0" },
        },
      },
    },
  }),
  ok: {
    200: {
      description:
        "The response, in JSON; or, to a client whose `Accept` names `text/event-stream`, Server-Sent Events, each `event: message` with one JSON-RPC message as `data`: progress notifications, then the response, and the stream ends.",
      json: McpAnswerSchema,
      stream: McpMessageSchema,
    },
    202: { description: "Only notifications or responses were sent: accepted, nothing to answer.", empty: true },
  },
  errors: {
    400: "Not a JSON-RPC message (nor a batch of them), a request other than `initialize` without `Mcp-Session-Id`, a malformed `Mcp-Session-Id` or an unsupported `MCP-Protocol-Version`.",
    403: ORIGIN_REFUSAL,
    404: "No open session with this `Mcp-Session-Id` (it was deleted, idled out or closed for another): initialize a new one.",
    406: "An `Accept` that takes neither `application/json` nor `text/event-stream`.",
    429: `The session already has ${MCP_REQUESTS_PER_SESSION} requests whose answers are open.`,
    503: "Every session the daemon keeps (`SWARM_MCP_MAX_SESSIONS`) has a request in flight.",
  },
});

export const deleteMcp = operation({
  method: "delete",
  path: "/mcp",
  operationId: "deleteMcp",
  tag: "mcp",
  summary: "End an MCP session",
  description:
    "Closes the session: calls of it still running are cancelled and answered with a JSON-RPC error, and its id answers 404 from now on.",
  headers: SESSION_HEADERS,
  ok: { 200: { description: "The session is closed.", empty: true } },
  errors: {
    400: "No `Mcp-Session-Id`, a malformed one, or an unsupported `MCP-Protocol-Version`.",
    403: ORIGIN_REFUSAL,
    404: "No open session with this `Mcp-Session-Id`.",
  },
});

export const getMcp = operation({
  method: "get",
  path: "/mcp",
  operationId: "getMcp",
  tag: "mcp",
  summary: "No standalone MCP stream",
  description:
    "The daemon sends nothing unasked (no notification outside a request's answer, no request to the client), so it offers no standalone stream: always 405, with `Allow: POST, DELETE`, as the Streamable HTTP transport provides.",
  ok: {},
  errors: { 403: ORIGIN_REFUSAL, 405: "Always: no standalone stream; `Allow: POST, DELETE`." },
});
