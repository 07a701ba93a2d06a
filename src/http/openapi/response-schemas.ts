import { z } from "zod";
import type {
  AgentDetail,
  AgentView,
  ControlResponse,
  CreateRunResponse,
  Delivery,
  MachineView,
  PermissionView,
  ResultView,
  RunSnapshot,
  RunSummary,
  SpawnResponse,
  SpendView,
  Usage,
} from "../../swarm-api.ts";
import { AGENT_STATES } from "../../swarm-api.ts";

/**
 * The answers of spec section 4 as zod schemas, for `GET /openapi.json`. Objects are strict, so a
 * field a route starts to send without being added here fails test/http/openapi-answers.test.ts;
 * the type checks at the bottom fail `tsc` when these and `src/swarm-api.ts` part ways.
 */

const Int = z.number().int();
const Epoch = Int.min(0).describe("Epoch milliseconds.");
const RunId = z.string().describe("Form `r_<hex>`.");
const AgentId = z.string().describe("Form `a_<hex>`.");
const RequestId = z.string().describe("Form `p_<hex>`.");

const AgentStateSchema = z.enum(AGENT_STATES);
const OutcomeSchema = z.enum(["success", "failed", "aborted", "budget-exceeded", "lost"]);

export const ErrorBodySchema = z
  .strictObject({ error: z.string() })
  .describe("Every refusal: the message, and nothing else (spec section 7).");
export const HealthSchema = z.strictObject({ ok: z.literal(true) });

export const UsageSchema = z
  .strictObject({
    inputTokens: Int.min(0),
    outputTokens: Int.min(0),
    cacheReadTokens: Int.min(0),
    cacheWriteTokens: Int.min(0),
    costUsd: z.number().min(0),
    calls: Int.min(0),
  })
  .describe("Model usage summed over `model_usage` events; `calls` is their number.");

export const SpendViewSchema = z
  .strictObject({
    maxTokens: Int.nullable(),
    maxCostUsd: z.number().nullable(),
    remainingTokens: Int.nullable(),
    remainingCostUsd: z.number().nullable(),
  })
  .describe("The agent's own caps and what it may still spend under them and every ancestor's; null: no cap.");

export const AgentViewSchema = z
  .strictObject({
    agentId: AgentId,
    runId: RunId,
    parentAgentId: z.string().nullable(),
    depth: Int.min(0),
    spawnIndex: Int.min(0),
    state: AgentStateSchema,
    specName: z.string(),
    sandboxId: z.string().nullable(),
    createdAt: Epoch,
    endedAt: Epoch.nullable(),
    outcome: OutcomeSchema.nullable(),
    pausedBy: z.enum(["operator", "cascade", "budget"]).optional().describe("Only while `paused`."),
    hibernated: z.literal(true).optional().describe("Only while the agent hibernates."),
    draining: z.literal(true).optional().describe("Only once a drain reached the live agent."),
    pendingPermissions: z.array(RequestId),
    queuePosition: Int.min(1).optional().describe("Only while the agent's sandbox waits for a start slot; 1 is next."),
    usage: UsageSchema,
    subtreeUsage: UsageSchema,
  })
  .describe("Spec section 2.2: the fold of the run's ledger.");

export const AgentDetailSchema = AgentViewSchema.extend({
  budget: SpendViewSchema,
  sessionStats: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("pi-coding-agent's session statistics, when the harness answers within 2 s."),
});

export const RunSnapshotSchema = z.strictObject({
  runId: RunId,
  rootAgentId: AgentId,
  asOf: Int.min(0).describe("The highest ledger `seq` reflected; pass it as `Last-Event-ID` to stream what follows."),
  agents: z.array(AgentViewSchema),
  usage: UsageSchema,
});

export const RunSummarySchema = z.strictObject({
  runId: RunId,
  rootAgentId: AgentId,
  specName: z.string().describe("The root's spec name."),
  createdAt: Epoch,
  states: z
    .record(AgentStateSchema, Int.min(0))
    .describe("How many of its agents are in each state, every state named."),
  agents: Int.min(0),
  live: Int.min(0),
  usage: UsageSchema,
});
export const RunListSchema = z.strictObject({ runs: z.array(RunSummarySchema).describe("Newest first.") });

export const CreateRunResponseSchema = z.strictObject({
  runId: RunId,
  rootAgentId: AgentId,
  state: z.literal("provisioning"),
});
export const SpawnResponseSchema = z.strictObject({ agentId: AgentId, state: z.enum(["provisioning", "spawning"]) });

export const ControlResponseSchema = z
  .strictObject({
    results: z.array(
      z.strictObject({
        agentId: AgentId,
        outcome: z.enum(["applied", "noop", "failed"]),
        error: z.string().optional(),
      }),
    ),
  })
  .describe("One result per affected agent, in the order they were processed.");
const DeliverySchema = z.enum(["steer", "turn", "queued"] satisfies Delivery[]);
export const SteerResponseSchema = ControlResponseSchema.extend({ delivery: DeliverySchema });
export const PromptAcceptedSchema = z.strictObject({ accepted: z.literal(true) });
export const BudgetAnswerSchema = z.strictObject({ agentId: AgentId, budget: SpendViewSchema });

export const PermissionViewSchema = z.strictObject({
  requestId: RequestId,
  runId: RunId,
  agentId: AgentId,
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  at: Epoch,
  expiresAt: Epoch.nullable(),
  state: z.enum(["pending", "resolved"]),
  decision: z.enum(["allow", "deny"]).nullable(),
  message: z.string().nullable(),
  by: z.enum(["operator", "stop", "run-deleted", "timeout"]).nullable(),
  resolvedAt: Epoch.nullable(),
});
export const PermissionListSchema = z.strictObject({
  permissions: z.array(PermissionViewSchema).describe("Oldest first."),
});

export const ResultViewSchema = z.strictObject({
  agentId: AgentId,
  state: z.enum(["settled", "pending"]),
  outcome: OutcomeSchema.nullable(),
  resultRef: z.string().nullable(),
  result: z.string().nullable(),
});
/** The 200 of the result route. */
export const SettledResultSchema = ResultViewSchema.extend({ state: z.literal("settled"), outcome: OutcomeSchema });
/** The 202 of the result route: still pending after the wait. */
export const PendingResultSchema = ResultViewSchema.extend({
  state: z.literal("pending"),
  outcome: z.null(),
  resultRef: z.null(),
  result: z.null(),
});

export const MachineViewSchema = z.strictObject({
  agentId: AgentId,
  running: z.boolean().describe("Whether the daemon runs a machine for the agent now."),
  value: z.unknown().describe("XState's `snapshot.value`; null without a machine."),
  tags: z.array(z.string()),
  transitions: z
    .array(z.strictObject({ at: Epoch, event: z.string(), value: z.unknown() }))
    .describe("The latest transitions, oldest first."),
});

/** The same type, optional fields included (intersections flattened first, as zod's are). */
type Flat<T> = T extends object ? { [K in keyof T]: Flat<T[K]> } : T;
type Same<A, B> = (<T>() => T extends Flat<A> ? 1 : 2) extends <T>() => T extends Flat<B> ? 1 : 2 ? true : false;
type Holds<T extends true> = T;
export type ResponseSchemasMatchSwarmApi = [
  Holds<Same<z.infer<typeof UsageSchema>, Usage>>,
  Holds<Same<z.infer<typeof SpendViewSchema>, SpendView>>,
  Holds<Same<z.infer<typeof AgentViewSchema>, AgentView>>,
  Holds<Same<z.infer<typeof AgentDetailSchema>, AgentDetail>>,
  Holds<Same<z.infer<typeof RunSnapshotSchema>, RunSnapshot>>,
  Holds<Same<z.infer<typeof RunSummarySchema>, RunSummary>>,
  Holds<Same<z.infer<typeof CreateRunResponseSchema>, CreateRunResponse>>,
  Holds<Same<z.infer<typeof SpawnResponseSchema>, SpawnResponse>>,
  Holds<Same<z.infer<typeof ControlResponseSchema>, ControlResponse>>,
  Holds<Same<z.infer<typeof PermissionViewSchema>, PermissionView>>,
  Holds<Same<z.infer<typeof ResultViewSchema>, ResultView>>,
  Holds<Same<z.infer<typeof MachineViewSchema>, MachineView>>,
];
