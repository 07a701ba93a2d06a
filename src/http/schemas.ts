import { z } from "zod";
import { SwarmError } from "../errors.ts";
import { AgentSpecSchema, BudgetSchema } from "../spec/agent-spec.ts";
import {
  MAX_DRAIN_TIMEOUT_MS,
  MAX_PERMISSION_MESSAGE_CHARS,
  MAX_RUN_LIST_LIMIT,
  MAX_WAIT_SECONDS,
} from "../swarm-api.ts";

/** Request bodies and queries of spec section 4. Bodies are strict: an unknown field is a 400 naming it. */

const Text = z.string().min(1, "must not be empty");
const Scope = z.enum(["agent", "subtree"], { error: 'must be "agent" or "subtree"' }).default("agent");
const AgentIdValue = z.string().min(1, "must not be empty");

export const CreateRunBody = z.strictObject({
  spec: AgentSpecSchema,
  prompt: Text.optional(),
  budget: BudgetSchema.optional(),
  keepAlive: z.boolean().optional(),
});

export const SpawnBody = z.strictObject({
  parentAgentId: AgentIdValue,
  spec: AgentSpecSchema,
  prompt: Text.optional(),
  waitFor: z.array(AgentIdValue).optional(),
  budget: BudgetSchema.optional(),
  idempotencyKey: z.string().min(1).max(256).optional(),
  keepAlive: z.boolean().optional(),
});

export const PromptBody = z.strictObject({ text: Text });
export const SteerBody = z.strictObject({ message: Text, scope: Scope });
// pause, resume and stop take an optional body: `prefault({})` parses a missing one as `{}`.
export const ScopeBody = z.strictObject({ scope: Scope }).prefault({});
const DRAIN_MESSAGE = `must be an integer number of milliseconds 1000..${MAX_DRAIN_TIMEOUT_MS}`;
export const StopBody = z
  .strictObject({
    mode: z.enum(["abort", "drain"], { error: 'must be "abort" or "drain"' }).default("abort"),
    scope: Scope,
    drainTimeoutMs: z
      .number()
      .int(DRAIN_MESSAGE)
      .min(1_000, DRAIN_MESSAGE)
      .max(MAX_DRAIN_TIMEOUT_MS, DRAIN_MESSAGE)
      .optional(),
  })
  .refine((body) => body.drainTimeoutMs === undefined || body.mode === "drain", {
    message: 'is only for mode "drain"',
    path: ["drainTimeoutMs"],
  })
  .prefault({});

/** `POST /agents/:agentId/permissions/:requestId`. */
export const PermissionAnswerBody = z.strictObject({
  decision: z.enum(["allow", "deny"], { error: 'must be "allow" or "deny"' }),
  message: z.string().min(1, "must not be empty").max(MAX_PERMISSION_MESSAGE_CHARS).optional(),
});

const LIMIT_MESSAGE = `must be an integer 1..${MAX_RUN_LIST_LIMIT}`;
/** `GET /runs?limit=`. */
export const RunListQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,4}$/, LIMIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().min(1, LIMIT_MESSAGE).max(MAX_RUN_LIST_LIMIT, LIMIT_MESSAGE))
    .optional(),
});

export const PermissionsQuery = z.object({
  state: z.enum(["pending", "resolved", "all"], { error: 'must be "pending", "resolved" or "all"' }).default("pending"),
});

const WAIT_MESSAGE = `must be an integer number of seconds 0..${MAX_WAIT_SECONDS}`;
/** Unknown query parameters are ignored (proxies and cache-busters add them); known ones are checked. */
export const ResultQuery = z.object({
  wait: z
    .string()
    .regex(/^\d{1,3}$/, WAIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().max(MAX_WAIT_SECONDS, WAIT_MESSAGE))
    .default(0),
});

/** `purge` is "true" or "false" and nothing else: a typo must not delete less, or more, than was meant. */
export const DeleteRunQuery = z.object({
  purge: z
    .enum(["true", "false"], { error: 'must be "true" or "false"' })
    .transform((value) => value === "true")
    .default(false),
});

const SEQ_MESSAGE = "must be a non-negative integer event id";
const Seq = z
  .string()
  .regex(/^\d{1,15}$/, SEQ_MESSAGE)
  .transform(Number);
export const EventsQuery = z.object({ lastEventId: Seq.optional() });
export const LastEventIdHeader = Seq;

/**
 * Ids in paths: `r_<hex>` and `a_<hex>`. A malformed id is answered as the 404 of its kind rather
 * than a 400: no such run or agent can exist, and the client's fix is the same (use a real id).
 */
export function runIdParam(value: string): string {
  if (!/^r_[0-9a-f]+$/.test(value)) throw new SwarmError("RUN_NOT_FOUND", `Run ${value} does not exist.`);
  return value;
}

/** Approval request ids are `p_<hex>`; anything else names no request. */
export function permissionIdParam(value: string): string {
  if (!/^p_[0-9a-f]+$/.test(value))
    throw new SwarmError("PERMISSION_NOT_FOUND", `Approval request ${value} does not exist.`);
  return value;
}

export function agentIdParam(value: string): string {
  if (!/^a_[0-9a-f]+$/.test(value)) throw new SwarmError("AGENT_NOT_FOUND", `Agent ${value} does not exist.`);
  return value;
}
