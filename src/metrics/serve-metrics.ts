import type { FastifyInstance } from "fastify";
import type { DaemonMetrics } from "./daemon-metrics.ts";
import { timeRequests } from "./request-metrics.ts";

/**
 * `GET /metrics` in Prometheus's text format, plus what only the server can measure: each request's
 * operation and latency, and its open event streams. The bearer token guards it like every route
 * but `/health` (`auth.ts`): metrics name models and show what the daemon is doing.
 */
export function serveMetrics(app: FastifyInstance, metrics: DaemonMetrics, server: { sseClients: () => number }): void {
  metrics.watch({ sseClients: server.sseClients });
  app.addHook("onResponse", timeRequests(metrics.requestEnded));
  app.get("/metrics", async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.header("content-type", metrics.registry.contentType).header("cache-control", "no-store").send(text);
  });
}
