import type { FastifyInstance } from "fastify";
import type { RunTimeline } from "../../api/timeline.ts";
import { SwarmError } from "../../errors.ts";
import type { SwarmApi } from "../../swarm-api.ts";
import { createTimeline, foldTimeline, timelineAnswer } from "../../views/run-timeline.ts";
import type { EventSource } from "../event-source.ts";
import { runIdParam } from "../path-params.ts";

export interface TimelineRouteDeps {
  swarm: SwarmApi;
  events: EventSource;
}

/**
 * GET /runs/:runId/timeline (spec section 4.20): the run's ledger read once, in pages, and folded by
 * the timeline's own fold (`src/views/run-timeline.ts`), which the console goes on with. Nothing is
 * kept between requests: a timeline costs the daemon memory only while it is asked for.
 */
export function timelineRoutes(app: FastifyInstance, { swarm, events }: TimelineRouteDeps): void {
  app.get<{ Params: { runId: string } }>("/runs/:runId/timeline", async (request): Promise<RunTimeline> => {
    const runId = runIdParam(request.params.runId);
    if (!swarm.hasRun(runId)) throw new SwarmError("RUN_NOT_FOUND", `Run ${runId} does not exist.`);
    const timeline = createTimeline(runId);
    const through = events.lastSeq(runId);
    for await (const event of events.iterate(runId, 0)) {
      if (event.seq > through) break;
      foldTimeline(timeline, event);
    }
    return timelineAnswer(timeline);
  });
}
