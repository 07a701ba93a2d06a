import type { FastifyInstance } from "fastify";
import { EventsQuery, LastEventIdHeader } from "../../api/events.ts";
import { SwarmError } from "../../errors.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { parseOrThrow } from "../../validation.ts";
import type { EventSource } from "../event-source.ts";
import { runIdParam } from "../path-params.ts";
import { EventStream } from "../sse/event-stream.ts";
import { SSE_HEADERS } from "../sse/sse-frame.ts";

export interface EventRouteDeps {
  swarm: SwarmApi;
  events: EventSource;
  slowConsumerLimit: number;
  /** Open streams, so the server can end them when it closes. */
  streams: Set<EventStream>;
  /** Told of each ephemeral event a stream dropped for a client that was behind (metrics). */
  onEphemeralDropped?: () => void;
}

/**
 * GET /runs/:runId/events (spec section 6), on `@fastify/sse` (registered by `buildServer`).
 * `sse: "manual"` skips the plugin's Accept negotiation: every client gets the stream, curl's
 * `*\/*` or no Accept included, and a 404 or 400 still leaves through our error mapping rather
 * than the plugin's own 406 body that `sse: "only"` answers a client refusing `text/event-stream`.
 */
export function eventRoutes(app: FastifyInstance, deps: EventRouteDeps): void {
  app.get<{ Params: { runId: string } }>("/runs/:runId/events", { sse: "manual" }, async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    if (!deps.swarm.hasRun(runId)) throw new SwarmError("RUN_NOT_FOUND", `Run ${runId} does not exist.`);
    const afterSeq = resumePoint(reply.sse.lastEventId, request.query);
    reply.headers(SSE_HEADERS);
    const stream = new EventStream({ ...deps, runId, afterSeq, sse: reply.sse, raw: reply.raw, log: request.log });
    deps.streams.add(stream);
    stream.onClose(() => deps.streams.delete(stream));
    await stream.start();
  });
}

/**
 * Where to start. The `Last-Event-ID` header (read by the plugin; `null` when absent or empty)
 * wins over `?lastEventId=` because a browser EventSource reconnects with the header while still
 * carrying its original query. With neither, the whole run is replayed from seq 1: "the stream of
 * the whole run", and a client that just created a run does not miss its first events. Live-only
 * clients pass `asOf` of `GET /runs/:id`.
 */
function resumePoint(header: string | null, query: unknown): number {
  if (header !== null) return parseOrThrow(LastEventIdHeader, header, "header.Last-Event-ID", "INVALID_QUERY");
  return parseOrThrow(EventsQuery, query, "query", "INVALID_QUERY").lastEventId ?? 0;
}
