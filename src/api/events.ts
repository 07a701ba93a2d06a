import { z } from "zod";
import { HARNESS_RECORDED_EVENT_NAMES, type HarnessEventType } from "../harness/protocol.ts";
import { RunEventSchema } from "../ledger/run-events.ts";
import { operation } from "./operation.ts";

/** The run's event stream (spec section 6): its query and header, and the shape of each message. */

/** Harness events sent live and never stored (spec section 6.2): no `id`, never replayed. */
export const EPHEMERAL_EVENT_TYPES = [
  "text",
  "thinking",
  "tool_update",
  "message_start",
  "message_end",
  "queue_update",
] as const satisfies readonly HarnessEventType[];

/** Persisted events of the ledger's own (spec section 6.1), in the order of `run-events.ts`. */
export const LIFECYCLE_EVENT_TYPES: readonly string[] = RunEventSchema.options.flatMap((option) => {
  const type = option.shape.type;
  return type instanceof z.ZodLiteral ? [String(type.value)] : [];
});

const Id = z
  .string()
  .regex(/^\d+$/)
  .describe("The event's ledger `seq`; send it back as `Last-Event-ID` to resume after it.");
const Stamp = { seq: z.number().int().min(1), at: z.number().int().min(0) };

/**
 * One message of `GET /runs/:runId/events` as `{id?, event, data}`: the SSE fields, `data` parsed.
 * Built from the ledger's own event schemas (`RunEventSchema`), so the stream's documentation
 * follows every event added there: a persisted event's data is its stored data plus `agentId`,
 * `seq` and `at`; an ephemeral one's is the harness's data plus `agentId`.
 */
export const STREAM_MESSAGE_SCHEMAS: ReadonlyArray<readonly [name: string, schema: z.ZodType]> = [
  ...RunEventSchema.options.map((option) => {
    const type = option.shape.type;
    const name = type instanceof z.ZodLiteral ? String(type.value) : "harness";
    const data = (option.shape.data as z.ZodObject).extend({ agentId: option.shape.agentId, ...Stamp });
    return [`StreamEvent.${name}`, z.strictObject({ id: Id, event: type, data })] as const;
  }),
  [
    "StreamEvent.ephemeral",
    z
      .strictObject({ event: z.enum(EPHEMERAL_EVENT_TYPES), data: z.looseObject({ agentId: z.string() }) })
      .describe("Live only: no `id`, lost while disconnected."),
  ],
];

const list = (names: readonly string[]) => names.map((name) => `\`${name}\``).join(", ");

/** The stream route's description in the document: its framing, resumption and every event type. */
const STREAM_DESCRIPTION = [
  "Server-Sent Events for the whole run (spec section 6). Each message: `id: <seq>` (persisted events only), `event: <type>`, `data: <JSON>`; every `data` has `agentId` (null for run-level events), a persisted event's also `seq` and `at`. A `: heartbeat` comment comes every 10 s.",
  "Reconnect with `Last-Event-ID` (or `?lastEventId=`): persisted events after it are replayed, then the stream goes on live with no gap and no duplicate. Pass a snapshot's `asOf` to start after it.",
  `Persisted lifecycle events: ${list(LIFECYCLE_EVENT_TYPES)}.`,
  `Persisted harness events (with \`hseq\` and \`harnessAt\`): ${list(HARNESS_RECORDED_EVENT_NAMES)}.`,
  `Ephemeral harness events (no \`id\`, never replayed): ${list(EPHEMERAL_EVENT_TYPES)}.`,
  "Each message's shape is the schema `StreamMessage` (`x-item-schema`).",
].join("\n\n");

const SEQ_MESSAGE = "must be a non-negative integer event id";
const Seq = z
  .string()
  .regex(/^\d{1,15}$/, SEQ_MESSAGE)
  .transform(Number)
  .pipe(z.number().int().min(0));
export const EventsQuery = z.object({
  lastEventId: Seq.optional().describe(
    "Replay persisted events after this `seq` (the `Last-Event-ID` header wins when both are given).",
  ),
});
export const LastEventIdHeader = Seq;

export const streamRunEvents = operation({
  method: "get",
  path: "/runs/{runId}/events",
  operationId: "streamRunEvents",
  tag: "events",
  summary: "Event stream of the whole run (SSE)",
  description: STREAM_DESCRIPTION,
  query: EventsQuery,
  headers: {
    "Last-Event-ID": {
      schema: LastEventIdHeader,
      describe:
        "Replay persisted events after this `seq`: what a reconnecting EventSource sends. With neither, the stream starts at the run's first event.",
    },
  },
  ok: {
    200: {
      description:
        "A Server-Sent Events stream that stays open until the client leaves, the daemon stops or the run is purged.",
      media: "text/event-stream",
      schema: { type: "string" },
    },
  },
  errors: { 400: "Malformed `Last-Event-ID` or `lastEventId`.", 404: "Run does not exist." },
});
