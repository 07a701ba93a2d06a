import type { ServerResponse } from "node:http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { FastifyBaseLogger } from "fastify";
import { DEFAULT_MCP_MAX_SESSIONS, DEFAULT_MCP_SESSION_IDLE_MS } from "../../api/mcp.ts";
import { SwarmError } from "../../errors.ts";
import { McpSession } from "./mcp-session.ts";

export interface McpSessionLimits {
  /** Sessions open at once (SWARM_MCP_MAX_SESSIONS). */
  maxSessions: number;
  /** A session with nothing in flight this long is closed (SWARM_MCP_SESSION_IDLE_MS). */
  idleMs: number;
}

export const DEFAULT_MCP_LIMITS: McpSessionLimits = {
  maxSessions: DEFAULT_MCP_MAX_SESSIONS,
  idleMs: DEFAULT_MCP_SESSION_IDLE_MS,
};

/** How often idle sessions are looked for, at most. */
const SWEEP_MS = 60_000;

export interface McpSessionsDeps {
  limits: McpSessionLimits;
  /** A new session's MCP server (the route tools), not yet connected. */
  openServer(): McpServer;
  log: FastifyBaseLogger;
  now?: () => number;
}

/**
 * The open MCP sessions of `/mcp`, by id, bounded: at most `maxSessions` (a new one closes the
 * least recently used session with nothing in flight, and is refused with 503 when every one has
 * something in flight), each closed after `idleMs` with nothing in flight, all closed when the
 * daemon closes. A closed session's id answers 404, and MCP clients then initialize a new one.
 */
export class McpSessions {
  readonly #deps: McpSessionsDeps;
  readonly #now: () => number;
  readonly #open = new Map<string, McpSession>();
  /** Sessions whose `initialize` is under way: they count against the limit too. */
  #starting = 0;
  #sweeper: NodeJS.Timeout | undefined;
  #closing = false;

  constructor(deps: McpSessionsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  get size(): number {
    return this.#open.size;
  }

  /** The open session `id`; a 404 when there is none (it was never opened, or it closed). */
  find(id: string): McpSession {
    const session = this.#open.get(id);
    if (session === undefined)
      throw new SwarmError(
        "MCP_SESSION_NOT_FOUND",
        `No open MCP session has id ${JSON.stringify(id)} (it ended, idled out or was closed for a newer one): initialize a new session.`,
      );
    return session;
  }

  /** Opens a session for an `initialize` request and answers it: the answer names the new session. */
  async initialize(request: Request, body: unknown, answer: ServerResponse): Promise<Response> {
    this.#makeRoom();
    this.#starting++;
    let session: McpSession | undefined;
    try {
      session = await McpSession.open({
        server: this.#deps.openServer(),
        onOpen: (opened) => this.#add(opened),
        onClose: (closed) => this.#remove(closed),
        onError: (err) => this.#deps.log.debug({ err }, "mcp session error"),
        now: this.#now,
      });
      return await session.handle(request, body, answer);
    } finally {
      this.#starting--;
      // The transport refused the initialize: the server it was given goes with it.
      if (session !== undefined && session.id === undefined) void session.close();
    }
  }

  /** Ends the open session `id` (its client's `DELETE`): calls still running are answered with an error. */
  async end(id: string): Promise<void> {
    const session = this.find(id);
    this.#open.delete(id);
    this.#deps.log.debug({ session: id }, "mcp session ended by its client");
    await session.close("the client ended the MCP session");
  }

  /** Closes every session (the daemon is closing): their calls are aborted and their answers end. */
  async closeAll(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    await Promise.all([...this.#open.values()].map((session) => session.close("swarmd is shutting down")));
  }

  /** Closes sessions with nothing in flight for `idleMs`. */
  sweep(): void {
    const before = this.#now() - this.#deps.limits.idleMs;
    for (const session of [...this.#open.values()])
      if (session.inFlight === 0 && session.lastUsed <= before) this.#drop(session, "idle");
  }

  #makeRoom(): void {
    if (this.#open.size + this.#starting < this.#deps.limits.maxSessions) return;
    let oldest: McpSession | undefined;
    for (const session of this.#open.values())
      if (session.inFlight === 0 && (oldest === undefined || session.lastUsed < oldest.lastUsed)) oldest = session;
    if (oldest === undefined)
      throw new SwarmError(
        "MCP_SESSIONS_FULL",
        `All ${this.#deps.limits.maxSessions} MCP sessions (SWARM_MCP_MAX_SESSIONS) have a request in flight; try again when one ends.`,
      );
    this.#drop(oldest, "the least recently used, for a new one");
  }

  #add(session: McpSession): void {
    const id = session.id;
    if (id === undefined) return;
    this.#open.set(id, session);
    this.#deps.log.debug({ session: id, open: this.#open.size }, "mcp session opened");
    // Opened while the daemon closes: it closes too.
    if (this.#closing) void session.close("swarmd is shutting down");
    else this.#sweeper ??= setInterval(() => this.sweep(), Math.min(SWEEP_MS, this.#deps.limits.idleMs)).unref();
  }

  /** Out of the table at once (its slot is free), then closed. */
  #drop(session: McpSession, why: string): void {
    if (session.id !== undefined) this.#open.delete(session.id);
    this.#deps.log.debug({ session: session.id, why }, "mcp session closed");
    void session.close();
  }

  #remove(session: McpSession): void {
    if (session.id !== undefined && this.#open.get(session.id) === session) this.#open.delete(session.id);
  }
}
