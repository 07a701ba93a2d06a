import { z } from "zod";

/**
 * The supervisor's control requests (channel 0: `{"c":0,"t":"req","id":N,"op":...}`), what the
 * daemon asks of a cluster sandbox's supervisor (src/harness/supervisor.ts). A request too long
 * for one line is sent as the content of a `request` channel, which the `req` frame names in
 * `body` instead of carrying the request.
 */
export const ControlRequestSchema = z.discriminatedUnion("op", [
  /**
   * Write spec.json and model.json into the control folder; keep `env` for the next harness start.
   * Each part is optional: what is left out stays as an earlier `init` left it (the spec and env at
   * provision, the model before each start: the gateway writes it). Idempotent.
   */
  z.object({
    op: z.literal("init"),
    spec: z.record(z.string(), z.unknown()).optional(),
    model: z.string().optional(),
    env: z.record(z.string(), z.string()).optional(),
  }),
  /** Write `/inputs/<name>` for every file (plain names only). */
  z.object({ op: z.literal("inputs"), files: z.record(z.string(), z.string()) }),
  /** Start the harness unless it runs; answered once it serves, or with its output's tail when it ended first. */
  z.object({ op: z.literal("start") }),
  /** End the harness (SIGTERM, SIGKILL after 5 s); answered once it exited. Idempotent. */
  z.object({ op: z.literal("hibernate") }),
  z.object({ op: z.literal("status") }),
]);
export type ControlRequest = z.infer<typeof ControlRequestSchema>;

/** `status`'s fields; `hibernated`: stopped by `hibernate` rather than never started or ended on its own. */
export const SupervisorStatusSchema = z.object({
  harness: z.enum(["running", "stopped"]),
  hibernated: z.boolean(),
  /** Its harness served, then ended on its own: the sandbox is gone. */
  ended: z.boolean().optional(),
});
export type SupervisorStatus = z.infer<typeof SupervisorStatusSchema>;

/** An answer (`{"c":0,"t":"res","id":N,...}`): `ok` and, for `status`, the status' fields. */
export const ControlAnswerSchema = z.union([
  z.object({ ok: z.literal(true), ...SupervisorStatusSchema.partial().shape }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type ControlAnswer = z.infer<typeof ControlAnswerSchema>;

/** The longest request sent in its `req` line; a longer one goes through a `request` channel. */
export const MAX_INLINE_REQUEST_CHARS = 512 * 1024;

/** The longest request body a supervisor reads from a `request` channel. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024 * 1024;

export { CHANNELS } from "./channels.ts";
