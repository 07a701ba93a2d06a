import { z } from "zod";
import type { ClientMessage } from "./protocol.ts";

const id = z.string().max(200).optional();
const text = z.string().max(1_000_000);

const ClientMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("hello"), after: z.number().int().min(0) }),
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
    data: z.unknown().optional(),
    error: z.string().optional(),
  }),
]);

const KNOWN_TYPES: ReadonlySet<string> = new Set(ClientMessageSchema.options.map((o) => o.shape.type.value));

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
