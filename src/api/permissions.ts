import { z } from "zod";
import { AgentId, Epoch, RequestId, RunId } from "./fields.ts";
import { MAX_PERMISSION_MESSAGE_CHARS } from "./limits.ts";
import { operation, requestBody } from "./operation.ts";

/** Approval requests (spec sections 2.6 and 4.15): a run's inbox, and an agent's request answered. */

export const PermissionDecisionSchema = z.enum(["allow", "deny"]);
export const PermissionStateSchema = z.enum(["pending", "resolved"]);
export const PermissionBySchema = z
  .enum(["operator", "stop", "run-deleted", "timeout"])
  .describe("Who decided: the operator, a stop of the agent (any end), a deleted run, or `approveTimeoutMs`.");

export const PermissionViewSchema = z
  .strictObject({
    requestId: RequestId,
    runId: RunId,
    agentId: AgentId,
    tool: z.string(),
    args: z
      .record(z.string(), z.unknown())
      .describe("The call's arguments (dropped, with a note, when they exceed the event size limit)."),
    at: Epoch,
    expiresAt: Epoch.nullable().describe("When `approveTimeoutMs` denies it; null: no timeout."),
    state: PermissionStateSchema,
    decision: PermissionDecisionSchema.nullable(),
    message: z.string().nullable(),
    by: PermissionBySchema.nullable(),
    resolvedAt: Epoch.nullable(),
  })
  .describe("One approval request: a tool call an agent's `approve` policy holds for the operator.");
export const PermissionListSchema = z.strictObject({
  permissions: z.array(PermissionViewSchema).describe("Oldest first."),
});

export const PermissionsQuery = z.object({
  state: z
    .enum(["pending", "resolved", "all"], { error: 'must be "pending", "resolved" or "all"' })
    .default("pending")
    .describe(
      '"pending" (default): requests waiting for a decision; "resolved": decided ones (decision, by, message); "all": both. Oldest first.',
    ),
});

/** `POST /agents/{agentId}/permissions/{requestId}`. */
export const PermissionAnswerBody = z.strictObject({
  decision: z
    .enum(["allow", "deny"], { error: 'must be "allow" or "deny"' })
    .describe('"allow" runs the held tool call; "deny" makes it fail.'),
  message: z
    .string()
    .min(1, "must not be empty")
    .max(MAX_PERMISSION_MESSAGE_CHARS)
    .optional()
    .describe(
      `For a deny: what the agent's model is told as the tool call's error (1..${MAX_PERMISSION_MESSAGE_CHARS} characters), e.g. why, or what to do instead.`,
    ),
});

export const listPermissions = operation({
  method: "get",
  path: "/runs/{runId}/permissions",
  operationId: "listPermissions",
  tag: "approvals",
  summary: "The run's approval inbox",
  description: "Approval requests of every agent of the run, oldest first.",
  query: PermissionsQuery,
  ok: { 200: { description: "The requests.", json: PermissionListSchema } },
  errors: { 400: "`state` other than `pending`, `resolved` or `all`.", 404: "Run does not exist." },
});

export const resolvePermission = operation({
  method: "post",
  path: "/agents/{agentId}/permissions/{requestId}",
  operationId: "resolvePermission",
  tag: "approvals",
  summary: "Answer an approval request",
  description: "Resolves a pending request of the agent; two answers at once: one wins, the other is the 409.",
  body: requestBody(PermissionAnswerBody, {
    allow: { summary: "Run the held tool call", value: { decision: "allow" } },
    deny: {
      summary: "Refuse it: the agent's model reads the message as the tool's error",
      value: { decision: "deny", message: "Not now: finish the tests first." },
    },
  }),
  ok: {
    202: {
      description: "The request as resolved, after `permission_resolved` is committed.",
      json: PermissionViewSchema,
    },
  },
  errors: {
    400: "`decision` other than `allow` or `deny`, an empty or too long `message`, another field.",
    404: "No such agent, or no such request of the agent (`PERMISSION_NOT_FOUND`).",
    409: "Already resolved (`PERMISSION_RESOLVED`).",
  },
});

export type PermissionDecision = z.output<typeof PermissionDecisionSchema>;
export type PermissionState = z.output<typeof PermissionStateSchema>;
export type PermissionBy = z.output<typeof PermissionBySchema>;
/** One approval request: a tool call an agent's `approve` policy holds for the operator. */
export type PermissionView = z.output<typeof PermissionViewSchema>;
export type PermissionAnswer = z.output<typeof PermissionAnswerBody>;
