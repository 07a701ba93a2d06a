import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ErrorCode, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { MCP_CANCELS_PER_SESSION, MCP_REQUESTS_PER_SESSION } from "../../api/mcp.ts";
import { SwarmError } from "../../errors.ts";

export interface McpSessionDeps {
  /** The session's MCP server, tools registered, not yet connected. */
  server: McpServer;
  /** The transport named the session (its `initialize` went through). */
  onOpen(session: McpSession): void;
  /** The session ended (deleted, closed by the table, or the daemon closing); called once. */
  onClose(session: McpSession): void;
  onError(err: Error): void;
  now(): number;
}

/**
 * One MCP session of `/mcp`: its MCP server on the SDK's Streamable HTTP transport (the Web
 * Standard one: it takes a `Request` and gives a `Response`, which fastify sends, so the daemon's
 * hooks, body parser and error mapping stay in the path). No event store: nothing is kept for a
 * client to resume.
 *
 * What keeps a session small, whatever its client does: at most `MCP_REQUESTS_PER_SESSION` answers
 * open at once (then a 429); a call whose client left before its answer is cancelled, as is one the
 * client cancels, and its answer ended; the SDK keeps a few bytes for each cancelled call until the
 * session ends, so after `MCP_CANCELS_PER_SESSION` of them the session is closed.
 */
export class McpSession {
  readonly #deps: McpSessionDeps;
  readonly #transport: WebStandardStreamableHTTPServerTransport;
  #inFlight = 0;
  /** The calls whose answers are open, to be told why when the session closes under them. */
  readonly #calls = new Set<RequestId>();
  #lastUsed: number;
  #cancels = 0;
  #closed = false;

  private constructor(deps: McpSessionDeps) {
    this.#deps = deps;
    this.#lastUsed = deps.now();
    this.#transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: () => deps.onOpen(this),
    });
    // Set before `connect`, which chains its own after it.
    this.#transport.onclose = () => {
      this.#closed = true;
      deps.onClose(this);
    };
  }

  static async open(deps: McpSessionDeps): Promise<McpSession> {
    const session = new McpSession(deps);
    deps.server.server.onerror = deps.onError;
    await deps.server.connect(session.#transport);
    return session;
  }

  /** The id the transport gave it once its `initialize` went through. */
  get id(): string | undefined {
    return this.#transport.sessionId;
  }

  /** Requests whose answers are open. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** When it last took a request or ended an answer. */
  get lastUsed(): number {
    return this.#lastUsed;
  }

  /**
   * Hands one HTTP request (`body` already parsed, `answer` the response it will be sent on) to the
   * transport and returns the transport's answer. A request is in flight until `answer` closes.
   */
  async handle(request: Request, body: unknown, answer: ServerResponse): Promise<Response> {
    if (this.#inFlight >= MCP_REQUESTS_PER_SESSION)
      throw new SwarmError(
        "MCP_SESSION_BUSY",
        `The MCP session already has ${MCP_REQUESTS_PER_SESSION} requests whose answers are open; wait for one to end.`,
      );
    this.#inFlight++;
    this.#lastUsed = this.#deps.now();
    const asked = idsOf(body, "request");
    for (const id of asked) this.#calls.add(id);
    answer.once("close", () => {
      this.#inFlight--;
      this.#lastUsed = this.#deps.now();
      for (const id of asked) this.#calls.delete(id);
      // The client left before its answer ended: nobody will read what the calls answer.
      if (!answer.writableFinished && asked.length > 0) this.cancel(asked, "the client closed the connection");
    });
    const response = await this.#transport.handleRequest(request, { parsedBody: body });
    // The calls the client cancelled (the transport has just aborted them) will never be answered:
    // end the streams that wait for their answers.
    const cancelled = idsOf(body, "cancelled");
    for (const id of cancelled) this.#transport.closeSSEStream(id);
    this.#counted(cancelled.length);
    return response;
  }

  /**
   * Cancels calls of this session as the client's `notifications/cancelled` would (their handlers'
   * signal aborts, so the route calls they wait on are dropped), and ends the streams that wait for
   * their answers.
   */
  cancel(ids: readonly RequestId[], reason: string): void {
    for (const requestId of ids) {
      this.#abort(requestId, reason);
      this.#transport.closeSSEStream(requestId);
    }
    this.#counted(ids.length);
  }

  /**
   * Closes the session; idempotent. Calls still running are aborted, and each is answered with a
   * JSON-RPC error saying `why` (a client would otherwise wait for its own timeout); then every
   * answer ends.
   */
  async close(why = "the MCP session was closed"): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const id of [...this.#calls]) {
      this.#abort(id, why);
      await this.#transport
        .send({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message: why } })
        .catch(() => undefined); // its answer had just ended
    }
    await this.#deps.server.close();
  }

  /** What the client's `notifications/cancelled` does: the call's handler is aborted and answers nothing. */
  #abort(requestId: RequestId, reason: string): void {
    this.#transport.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason } });
  }

  #counted(cancels: number): void {
    this.#cancels += cancels;
    if (this.#cancels >= MCP_CANCELS_PER_SESSION)
      void this.close(`the MCP session was closed after ${MCP_CANCELS_PER_SESSION} cancelled calls`);
  }
}

/** The ids of the requests (or of the calls cancelled by notifications) among the message or batch `body`. */
function idsOf(body: unknown, what: "request" | "cancelled"): RequestId[] {
  const messages = Array.isArray(body) ? body : [body];
  const ids: RequestId[] = [];
  for (const message of messages) {
    if (typeof message !== "object" || message === null || !("method" in message)) continue;
    if (what === "request" && "id" in message) ids.push(message.id as RequestId);
    const params = "params" in message ? (message.params as { requestId?: unknown } | undefined) : undefined;
    const cancelled = params?.requestId;
    if (what === "cancelled" && message.method === "notifications/cancelled" && isRequestId(cancelled))
      ids.push(cancelled);
  }
  return ids;
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === "string" || (typeof value === "number" && Number.isInteger(value));
}
