import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * The `operation` label of each route, by method and route pattern: a fixed set, so a label never
 * carries an id. A route missing here is `other`; a request no route matched is `unmatched`.
 */
const OPERATIONS: Readonly<Record<string, string>> = {
  "POST /runs": "create_run",
  "GET /runs": "list_runs",
  "GET /runs/:runId": "get_run",
  "GET /runs/:runId/timeline": "get_timeline",
  "DELETE /runs/:runId": "delete_run",
  "GET /runs/:runId/permissions": "list_permissions",
  "POST /runs/:runId/agents": "spawn",
  "GET /agents/:agentId": "get_agent",
  "GET /agents/:agentId/machine": "get_machine",
  "GET /agents/:agentId/result": "result",
  "POST /agents/:agentId/budget": "budget",
  "POST /agents/:agentId/prompt": "prompt",
  "POST /agents/:agentId/steer": "steer",
  "POST /agents/:agentId/pause": "pause",
  "POST /agents/:agentId/resume": "resume",
  "POST /agents/:agentId/stop": "stop",
  "POST /agents/:agentId/permissions/:requestId": "resolve_permission",
  "GET /models": "list_models",
  "GET /nodes": "list_nodes",
};

/**
 * Not timed: an event stream's "latency" is how long its client stayed (`swarmd_sse_clients`
 * counts those), and probes, scrapes and the API's documentation would drown the requests that
 * control agents.
 */
const UNTIMED: ReadonlySet<string> = new Set([
  "/health",
  "/metrics",
  "/runs/:runId/events",
  "/openapi.json",
  "/docs",
  "/docs/:asset",
  "/",
  "/console/:asset",
]);

/** What a request did, for the `operation` label; `undefined` for requests that are not timed. */
export function operationOf(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url;
  if (route === undefined) return "unmatched";
  if (UNTIMED.has(route)) return undefined;
  const operation = OPERATIONS[`${request.method} ${route}`] ?? "other";
  // A drain is a stop with `mode: "drain"`, but it behaves (and lasts) like nothing else.
  if (operation === "stop" && (request.body as { mode?: unknown } | undefined)?.mode === "drain") return "drain";
  return operation;
}

/** A fastify `onResponse` hook reporting each timed request, refused ones (401, 403, 404) included. */
export function timeRequests(requestEnded: (operation: string, statusCode: number, seconds: number) => void) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const operation = operationOf(request);
    if (operation !== undefined) requestEnded(operation, reply.statusCode, reply.elapsedTime / 1000);
  };
}
