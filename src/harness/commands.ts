// zod's mini build: what every harness loads before its socket answers, so the parser of its
// commands costs it a fraction of the full build's code and start-up time.
import * as z from "zod/mini";
import type { ClientMessage } from "./protocol.ts";

const id = z.optional(z.string().check(z.maxLength(200)));
const text = z.string().check(z.maxLength(1_000_000));

const ClientMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("hello"), after: z.int().check(z.minimum(0)) }),
  z.object({ type: z.literal("prompt"), id, message: text }),
  z.object({ type: z.literal("steer"), id, message: text }),
  z.object({ type: z.literal("abort"), id }),
  z.object({ type: z.literal("get_session_stats"), id }),
  z.object({ type: z.literal("get_state"), id }),
  z.object({ type: z.literal("shutdown"), id }),
  z.object({
    type: z.literal("host_result"),
    id: z.string(),
    ok: z.boolean(),
    data: z.optional(z.unknown()),
    error: z.optional(z.string()),
  }),
]);

const KNOWN_TYPES: ReadonlySet<string> = new Set(
  ClientMessageSchema.def.options.flatMap((o) => o.shape.type.def.values),
);

export type ParsedLine =
  | { ok: true; message: ClientMessage }
  | { ok: false; id?: string; command: string; error: string };

/** Parse and validate one client line; never throws. */
export function parseClientLine(line: string): ParsedLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    return {
      ok: false,
      command: "unknown",
      error: `invalid JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  const head = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const command = typeof head.type === "string" ? head.type.slice(0, 100) : "unknown";
  const rawId = typeof head.id === "string" ? head.id.slice(0, 200) : undefined;
  if (!KNOWN_TYPES.has(command)) return { ok: false, id: rawId, command, error: `unknown command type "${command}"` };
  const parsed = ClientMessageSchema.safeParse(raw);
  if (parsed.success) return { ok: true, message: parsed.data as ClientMessage };
  const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(message)"}: ${i.message}`).join("; ");
  return { ok: false, id: rawId, command, error: problems };
}
