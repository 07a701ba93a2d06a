import type { FastifyInstance } from "fastify";
import { SwarmError } from "../../errors.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import type { EventSource } from "../event-source.ts";
import { EventsQuery, LastEventIdHeader, parseOrThrow, runIdParam } from "../schemas.ts";
import { EventStream } from "../sse/event-stream.ts";

export interface EventRouteDeps {
  swarm: SwarmApi;
  events: EventSource;
  heartbeatMs: number;
  slowConsumerLimit: number;
  /** Open streams, so the server can end them when it closes. */
  streams: Set<EventStream>;
}

/**
 * GET /runs/:runId/events (spec section 6). Written to the raw response after `reply.hijack()`:
 * the slow-consumer rules need to see each write's backpressure (see SSE.md).
 */
export function eventRoutes(app: FastifyInstance, deps: EventRouteDeps): void {
  app.get<{ Params: { runId: string } }>("/runs/:runId/events", async (request, reply) => {
    const runId = runIdParam(request.params.runId);
    if (!deps.swarm.hasRun(runId)) throw new SwarmError("RUN_NOT_FOUND", `Run ${runId} does not exist.`);
    const afterSeq = resumePoint(request.headers["last-event-id"], request.query);
    reply.hijack();
    const stream = new EventStream({ ...deps, runId, afterSeq, raw: reply.raw, log: request.log });
    deps.streams.add(stream);
    stream.onClose(() => deps.streams.delete(stream));
    await stream.start();
  });
}

/**
 * Where to start. The `Last-Event-ID` header wins over `?lastEventId=` because a browser
 * EventSource reconnects with the header while still carrying its original query. With neither,
 * the whole run is replayed from seq 1: "the stream of the whole run", and a client that just
 * created a run does not miss its first events. Live-only clients pass `asOf` of `GET /runs/:id`.
 */
function resumePoint(header: string | string[] | undefined, query: unknown): number {
  if (header !== undefined && header !== "") return parseOrThrow(LastEventIdHeader, header, "header.Last-Event-ID", "INVALID_QUERY");
  return parseOrThrow(EventsQuery, query, "query", "INVALID_QUERY").lastEventId ?? 0;
}
