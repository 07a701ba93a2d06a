import { z } from "zod";
import { AgentId, Epoch, Int, RunId } from "./fields.ts";
import { ACTIVITIES } from "./limits.ts";
import { operation } from "./operation.ts";

/** A run's timeline (spec section 4.20): what each agent was doing over time, folded from the ledger. */

export const ActivitySchema = z
  .enum(ACTIVITIES)
  .describe(
    "`waiting`: spawning, its `waitFor` not yet settled; `provisioning`: its sandbox being made; `turn`: running a turn; `idle`: running, between turns; `paused`; `hibernated`; `approval`: waiting for an operator's decision on a tool call; `draining`: a drain reached it, its turn finishing.",
  );

export const TimelineSpanSchema = z
  .strictObject({
    activity: ActivitySchema,
    from: Epoch,
    to: Epoch.nullable().describe("Null for what the agent is doing now (it has not ended)."),
  })
  .describe("One stretch of one activity.");

export const TimelineStatusSchema = z
  .strictObject({
    state: z.enum(["spawning", "provisioning", "running", "paused", "ended"]),
    turn: z.boolean().describe("A turn is under way (between the harness's `agent_start` and `agent_end`)."),
    approvals: Int.min(0).describe("Its approval requests waiting for a decision."),
    hibernated: z.boolean(),
    draining: z.boolean(),
  })
  .describe("What the agent's activity is decided from, as of `asOf`: a client folds the events after it from here.");

export const AgentTimelineSchema = z.strictObject({
  agentId: AgentId,
  spans: z.array(TimelineSpanSchema).describe("Oldest first, each ending where the next begins."),
  status: TimelineStatusSchema,
});

export const RunTimelineSchema = z
  .strictObject({
    runId: RunId,
    asOf: Int.min(0).describe("The highest ledger `seq` folded in; events after it continue the timeline."),
    agents: z.array(AgentTimelineSchema).describe("In spawn order."),
  })
  .describe("Each agent's activity from its spawn to its end.");

export const getRunTimeline = operation({
  method: "get",
  path: "/runs/{runId}/timeline",
  operationId: "getRunTimeline",
  tag: "runs",
  summary: "Timeline of a run",
  description:
    "What each agent of the run was doing from its spawn to its end, folded from the run's ledger up to `asOf` (the web console's timeline). Pass `asOf` as `Last-Event-ID` to the event stream, and fold what follows with the same rules, to keep it current.",
  ok: { 200: { description: "The timeline.", json: RunTimelineSchema } },
  errors: { 404: "Run does not exist." },
});

export type Activity = z.output<typeof ActivitySchema>;
export type TimelineSpan = z.output<typeof TimelineSpanSchema>;
export type TimelineStatus = z.output<typeof TimelineStatusSchema>;
export type AgentTimeline = z.output<typeof AgentTimelineSchema>;
/** `GET /runs/{runId}/timeline`. */
export type RunTimeline = z.output<typeof RunTimelineSchema>;
