import { fastifySSE } from "@fastify/sse";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import { createRouteServer } from "../bridge/route-server.ts";
import { SwarmError } from "../errors.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { DaemonMetrics } from "../metrics/daemon-metrics.ts";
import { serveMetrics } from "../metrics/serve-metrics.ts";
import type { SwarmApi } from "../swarm-api.ts";
import { bearerAuth } from "./auth.ts";
import { consolePage } from "./console-page.ts";
import { sendClientError, sendError } from "./errors.ts";
import type { EventSource } from "./event-source.ts";
import { hostCheck } from "./host-check.ts";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "./json-depth.ts";
import { DEFAULT_MCP_LIMITS, type McpSessionLimits, McpSessions } from "./mcp/mcp-sessions.ts";
import { selfClient } from "./mcp/self-client.ts";
import { openApiRoutes } from "./openapi/openapi-routes.ts";
import { agentRoutes } from "./routes/agents.ts";
import { eventRoutes } from "./routes/events.ts";
import { forkRoutes } from "./routes/forks.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { modelRoutes } from "./routes/models.ts";
import { nodeRoutes } from "./routes/nodes.ts";
import { runRoutes } from "./routes/runs.ts";
import { timelineRoutes } from "./routes/timeline.ts";
import type { EventStream } from "./sse/event-stream.ts";

export interface ServerConfig {
  /** Largest accepted request body; larger ones are a 413. */
  bodyLimitBytes: number;
  /** When set, every route but `/health`, the docs page, the console and their files (`auth.ts`) needs `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * Host header names served besides 127.0.0.1, localhost and [::1] (the daemon's SWARM_HOST and
   * SWARM_ALLOWED_HOSTS); a request naming any other host, or none, is a 403 on every route.
   */
  allowedHosts?: readonly string[];
  /**
   * What the daemon listens on (SWARM_HOST): `/mcp`'s tools call its routes back there, at the port
   * it listens on (a wildcard on loopback). Default: the address it listens on.
   */
  listenHost?: string;
  /** `/mcp`'s session limits (SWARM_MCP_MAX_SESSIONS, SWARM_MCP_SESSION_IDLE_MS); `DEFAULT_MCP_LIMITS` unless set. */
  mcp?: Partial<McpSessionLimits>;
  /** Interval of the `: heartbeat` comment on event streams; the spec's 10 s unless a test shortens it. */
  heartbeatMs?: number;
  /** Persisted events queued for a client that is not reading before its stream is cut; the spec's 500 unless set. */
  slowConsumerLimit?: number;
  /** The daemon's metrics: when set, `GET /metrics` serves them and requests and streams are counted. */
  metrics?: DaemonMetrics;
  /** The console's build (default `dist/console/` of the installation). */
  consoleDir?: string;
  /** Fastify's logger options (tests: `false`), or the daemon's own logger (`loggerInstance`). */
  logger?: FastifyServerOptions["logger"];
  loggerInstance?: FastifyBaseLogger;
}

/** Spec section 8: the event stream's heartbeat interval and slow-consumer cut-off. */
const SPEC_HEARTBEAT_MS = 10_000;
const SPEC_SLOW_CONSUMER_LIMIT = 500;

export interface ServerDeps {
  swarm: SwarmApi;
  events: EventSource;
  /** What `GET /health` asks: whether the ledger writes (trying it again when a write failed). Absent: always healthy. */
  storage?: Pick<Ledger, "checkStorage">;
  config: ServerConfig;
}

/**
 * The HTTP app of spec section 4, built but not listening (`main.ts` listens; tests `inject`).
 * Every error, fastify's own included, leaves through `sendError` as `{"error": message}`.
 */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { config } = deps;
  const app = Fastify({
    ...(config.loggerInstance ? { loggerInstance: config.loggerInstance } : { logger: config.logger ?? false }),
    // One line per request, at debug only (below): at info they drown what an operator must see.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    // Errors fastify raises before routing (a malformed URL) go through the same mapping.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply),
    // And so do node's refusals of requests it cannot even parse.
    clientErrorHandler: sendClientError,
    // node answers a missing Host with a bare 400 of its own; hostCheck refuses it with the others.
    http: { requireHostHeader: false },
  });

  // Bodies are JSON only: fastify's built-in text/plain parser would let a string through to zod
  // as "expected object" when the honest answer is 415.
  app.removeContentTypeParser("text/plain");
  // pause, resume and stop take an optional body; clients that always send
  // `content-type: application/json` with nothing after it get "no body", not a 400.
  const defaultJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text === "") done(null, undefined);
    else
      defaultJson(request, text, (err, value) => {
        // JSON.parse takes any depth, but JSON.stringify (ledger, index) and other recursive walks
        // overflow the stack a few thousand levels down: refuse such bodies here as a 400.
        if (err === null && exceedsJsonDepth(value, MAX_JSON_DEPTH))
          done(new SwarmError("INVALID_BODY", `body: nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
        else done(err, value);
      });
  });

  app.setErrorHandler((err, request, reply) => sendError(err, request, reply));
  app.setNotFoundHandler((request) => {
    throw new SwarmError("NOT_FOUND", `No route ${request.method} ${request.url.split("?")[0] ?? ""}.`);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.debug(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      "request",
    );
  });
  app.addHook("onRequest", hostCheck(config.allowedHosts));
  if (config.token !== undefined && config.token !== "") app.addHook("onRequest", bearerAuth(config.token));

  const streams = new Set<EventStream>();
  // The tool bridge's sessions at /mcp: each tool calls the daemon's own routes (mcp/self-client.ts).
  const client = selfClient(app, config.listenHost, config.token);
  const sessions = new McpSessions({
    limits: { ...DEFAULT_MCP_LIMITS, ...config.mcp },
    openServer: () => createRouteServer({ client }),
    log: app.log,
  });
  // Open event streams and MCP answers would keep `close()` waiting forever; end them first.
  app.addHook("preClose", async () => {
    for (const stream of [...streams]) stream.close("shutdown");
    await sessions.closeAll();
  });
  if (config.metrics) serveMetrics(app, config.metrics, { sseClients: () => streams.size });

  app.get("/health", async (_request, reply) => {
    const storage = deps.storage ? await deps.storage.checkStorage() : { ok: true as const };
    if (storage.ok) return { ok: true };
    const error = storage.error.code === "STORAGE_FULL" ? "STORAGE_FULL" : "INTERNAL";
    return reply.code(503).header("cache-control", "no-store").send({ ok: false, error });
  });
  const endStreams = (runId: string) => {
    for (const stream of [...streams]) if (stream.runId === runId) stream.close("run-removed");
  };
  runRoutes(app, { swarm: deps.swarm, endStreams });
  timelineRoutes(app, { swarm: deps.swarm, events: deps.events });
  agentRoutes(app, deps.swarm);
  forkRoutes(app, deps.swarm);
  modelRoutes(app, deps.swarm);
  nodeRoutes(app, deps.swarm);
  mcpRoutes(app, { sessions, allowedHosts: config.allowedHosts });
  openApiRoutes(app);
  consolePage(app, config.consoleDir);
  // The plugin hooks `onRoute` when it loads, so the event routes are registered after it. It
  // writes the head and the heartbeat; the frames are the stream's own (sse/event-stream.ts).
  app.register(fastifySSE, { heartbeatInterval: config.heartbeatMs ?? SPEC_HEARTBEAT_MS });
  app.register(async (scope) => {
    eventRoutes(scope, {
      swarm: deps.swarm,
      events: deps.events,
      slowConsumerLimit: config.slowConsumerLimit ?? SPEC_SLOW_CONSUMER_LIMIT,
      streams,
      onEphemeralDropped: config.metrics?.ephemeralDropped,
    });
  });
  return app;
}
