import { z } from "zod";
import { HARNESS_ERROR_CODES, type HarnessEventType, type HarnessMessage, MAX_LINE_BYTES } from "./protocol.ts";

/**
 * What the service accepts from a harness. A harness runs beside code chosen by a model, and the
 * agent can replace it (bind its own server on the control socket), so every line is hostile input:
 * it is checked against these schemas and dropped when it does not match, never trusted by cast.
 */

/** Longest line read from a harness; longer ones are discarded as they stream (memory stays bounded). */
export const MAX_HARNESS_LINE_BYTES = MAX_LINE_BYTES;

/** An event whose hseq is further than this past the newest one seen is dropped (hseq is gap-free). */
export const MAX_HSEQ_STEP = 100_000;

/** Serialized size above which an event's `data` is replaced by a note, so one line cannot fill the ledger. */
export const MAX_EVENT_DATA_BYTES = 256 * 1024;

const MAX_ERROR_CHARS = 4096;

/** Error texts are quoted into logs and API answers: long ones are cut rather than refused. */
const errorText = z
  .string()
  .transform((s) => (s.length > MAX_ERROR_CHARS ? `${s.slice(0, MAX_ERROR_CHARS)}… (cut)` : s));

const EVENT_TYPES = [
  "agent_start",
  "agent_end",
  "turn_start",
  "turn_end",
  "message_start",
  "message_end",
  "text",
  "thinking",
  "tool_start",
  "tool_update",
  "tool_end",
  "compaction_start",
  "compaction_end",
  "auto_retry_start",
  "auto_retry_end",
  "extension_error",
  "permission_request",
  "permission_resolved",
  "queue_update",
  "prompt_accepted",
  "turn_settled",
] as const satisfies readonly HarnessEventType[];

/** `turn_settled` is the one event whose fields the service acts on. */
export const TurnSettledDataSchema = z.object({
  outcome: z.enum(["success", "failed", "aborted"]),
  text: z.string().nullable(),
  error: errorText.optional(),
});

const DataRecord = z.record(z.string(), z.unknown());

const EventMessageSchema = z.object({
  type: z.literal("event"),
  hseq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  event: z.enum(EVENT_TYPES),
  at: z.number().finite(),
  data: DataRecord,
});

const ResponseMessageSchema = z.object({
  type: z.literal("response"),
  id: z.string().max(128).optional(),
  command: z.string().max(64),
  success: z.boolean(),
  data: z.unknown().optional(),
  error: errorText.optional(),
  code: z.enum(HARNESS_ERROR_CODES).optional(),
});

const HostCallMessageSchema = z.object({
  type: z.literal("host_call"),
  id: z.string().min(1).max(128),
  method: z.enum(["spawn_agent", "await_result", "permission"]),
  params: DataRecord,
});

const HarnessMessageSchema = z.discriminatedUnion("type", [
  EventMessageSchema,
  ResponseMessageSchema,
  HostCallMessageSchema,
]);

/** A parsed line, or why it was dropped (short, safe to log: no echo of the line itself). */
export type ParsedLine = { ok: true; message: HarnessMessage } | { ok: false; reason: string };

/** Parse and check one line from a harness. Never throws. */
export function parseHarnessLine(line: string): ParsedLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  const parsed = HarnessMessageSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: describe(parsed.error) };
  const message = parsed.data;
  if (message.type === "event" && message.event === "turn_settled") {
    const data = TurnSettledDataSchema.safeParse(message.data);
    if (!data.success) return { ok: false, reason: `turn_settled: ${describe(data.error)}` };
    return { ok: true, message: { ...message, data: data.data } };
  }
  return { ok: true, message: message as HarnessMessage };
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid message";
  const path = issue.path.map(String).join(".").slice(0, 64) || "(message)";
  return `${path}: ${issue.message.slice(0, 120)}`;
}

/**
 * What to persist or publish of an object a harness sent (an event's `data`, the session stats a
 * hibernation records): itself when its JSON is at most `MAX_EVENT_DATA_BYTES`, else a note saying
 * what was dropped (also when it cannot be serialized).
 */
export function capEventData(data: Record<string, unknown>): Record<string, unknown> {
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(data));
  } catch {
    return { truncated: true, note: "data could not be serialized" };
  }
  if (bytes <= MAX_EVENT_DATA_BYTES) return data;
  return { truncated: true, bytes, note: `data of ${bytes} bytes exceeded ${MAX_EVENT_DATA_BYTES} and was dropped` };
}
