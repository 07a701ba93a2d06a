import { z } from "zod";
import {
  AgentId,
  AgentStateSchema,
  Epoch,
  ForkedFromSchema,
  Int,
  OutcomeSchema,
  queryInteger,
  RequestId,
  RunId,
  ScopeSchema,
  SpendViewSchema,
  Text,
  UsageSchema,
} from "./fields.ts";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  MACHINE_TRANSITIONS_KEPT,
  MAX_DRAIN_TIMEOUT_MS,
  MAX_WAIT_SECONDS,
} from "./limits.ts";
import { operation, requestBody } from "./operation.ts";
import { type Rule, withRules } from "./rules.ts";

/** One agent's routes (spec sections 2.2, 2.4 and 4.6 to 4.12): its view, machine, budget, turns, controls and result. */

export const PausedBySchema = z
  .enum(["operator", "cascade", "budget"])
  .describe(
    "Who paused the agent: the operator, a pause of a subtree above it, or a spend budget it or an ancestor ran out of.",
  );

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
    pausedBy: PausedBySchema.optional().describe("Only while `paused`."),
    hibernated: z
      .literal(true)
      .optional()
      .describe(
        "Only while the agent hibernates: still `running`, idle between turns, its harness ended to free memory; the next prompt or steer starts it again with its session and files.",
      ),
    draining: z
      .literal(true)
      .optional()
      .describe(
        "Only once a drain reached the live agent: it takes no new prompt, steer or spawn and ends when its turn settles.",
      ),
    node: z
      .string()
      .optional()
      .describe(
        "The node its sandbox runs on (`GET /nodes`; `local` on single-host runtimes): present once provisioned.",
      ),
    unreachable: z
      .literal(true)
      .optional()
      .describe(
        "Only while the daemon cannot reach the node of the agent's live sandbox (`agent_unreachable` until `agent_reachable`); the sandbox may still run there.",
      ),
    forkedFrom: ForkedFromSchema.optional(),
    pendingPermissions: z
      .array(RequestId)
      .describe("Ids of its approval requests that wait for a decision (`GET /runs/{runId}/permissions`)."),
    queuePosition: Int.min(1).optional().describe("Only while the agent's sandbox waits for a start slot; 1 is next."),
    usage: UsageSchema.describe("Its own model calls."),
    subtreeUsage: UsageSchema.describe("The model calls of its whole subtree: it and every descendant."),
    toolErrors: Int.min(0).describe(
      "Its tool calls that swarmd itself refused or could not carry out (host calls past the queue, refused spawns, denied approvals, model calls the gateway refused): the sum of its `tool_refused` events' `count`. 0 when none.",
    ),
  })
  .describe("Spec section 2.2: the fold of the run's ledger.");

export const AgentDetailSchema = AgentViewSchema.extend({
  prompt: z.string().nullable().describe("The task it was spawned with (its first turn); null when none."),
  waitFor: z
    .array(AgentId)
    .describe("The agents whose results it waited for before it was forked (`/inputs/<agentId>.md`)."),
  budget: SpendViewSchema,
  sessionStats: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("pi-coding-agent's session statistics, when the harness answers within 2 s and the agent is not paused."),
});

export const MachineTransitionSchema = z
  .strictObject({ at: Epoch, event: z.string(), value: z.unknown() })
  .describe("One transition of an agent's machine: the event it took and the state value it went to.");

export const MachineViewSchema = z
  .strictObject({
    agentId: AgentId,
    running: z
      .boolean()
      .describe(
        "Whether the daemon runs a machine for the agent now (an agent that had ended before a restart has none).",
      ),
    value: z.unknown().describe("XState's `snapshot.value`; null without a machine."),
    tags: z.array(z.string()).describe("Tags of the current state (`live`, `running`, `paused`, ...)."),
    transitions: z
      .array(MachineTransitionSchema)
      .describe(
        `The latest transitions, oldest first (at most ${MACHINE_TRANSITIONS_KEPT}, since the daemon started).`,
      ),
  })
  .describe("An offline stand-in for the Stately inspector.");

const TokensCap = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const CostCap = z.number().min(0).max(1e9);
/** `POST /agents/{agentId}/budget`: new absolute spend caps for the agent's subtree; `null` lifts its own cap. */
export const SetBudgetBody = withRules(
  z.strictObject({
    maxTokens: TokensCap.nullable()
      .optional()
      .describe(
        "New absolute cap, not an increment, on the tokens (input, output and cache, summed over every model call) the agent and all its descendants may use; null lifts the agent's own cap (its ancestors' still bound it).",
      ),
    maxCostUsd: CostCap.nullable()
      .optional()
      .describe(
        "New absolute cap, not an increment, on the US dollars the model calls of the agent and all its descendants may cost; null lifts the agent's own cap.",
      ),
  }),
  {
    holds: (caps) => caps.maxTokens !== undefined || caps.maxCostUsd !== undefined,
    message: "must name maxTokens, maxCostUsd or both",
    toolMessage: "Give maxTokens, maxCostUsd or both.",
  },
);
export const BudgetAnswerSchema = z.strictObject({ agentId: AgentId, budget: SpendViewSchema });

export const PromptBody = z.strictObject({
  text: Text.describe("The prompt: starts a new turn on a live agent."),
});
export const PromptAcceptedSchema = z.strictObject({ accepted: z.literal(true) });

export const SteerBody = z.strictObject({
  message: Text.describe(
    "Guidance delivered into the running turn after its current tool calls finish. With scope subtree, the agent gets it with a table of its children and is asked to re-plan.",
  ),
  scope: ScopeSchema,
});
// pause, resume and stop take an optional body: `prefault({})` parses a missing one as `{}`.
export const ScopeBody = z.strictObject({ scope: ScopeSchema }).prefault({});

const DRAIN_MESSAGE = `must be an integer number of milliseconds 1000..${MAX_DRAIN_TIMEOUT_MS}`;
const DRAIN_TIMEOUT_ONLY_FOR_DRAIN: Rule<{ mode: string; drainTimeoutMs?: number | undefined }> = {
  holds: (body) => body.drainTimeoutMs === undefined || body.mode === "drain",
  path: "drainTimeoutMs",
  message: 'is only for mode "drain"',
};
export const StopBody = withRules(
  z.strictObject({
    mode: z
      .enum(["abort", "drain"], { error: 'must be "abort" or "drain"' })
      .default("abort")
      .describe(
        '"abort" (default) ends the current turn at once. "drain" waits for the running turn, then ends the agent as done; aborted at the deadline (drainTimeoutMs). A draining agent takes no new prompt, steer or spawn (HTTP 409).',
      ),
    scope: ScopeSchema,
    drainTimeoutMs: z
      .number()
      .int(DRAIN_MESSAGE)
      .min(1_000, DRAIN_MESSAGE)
      .max(MAX_DRAIN_TIMEOUT_MS, DRAIN_MESSAGE)
      .optional()
      .describe(
        `Mode "drain" only: how long, in ms (1000..${MAX_DRAIN_TIMEOUT_MS}), the agents may take to finish their turn before they are aborted. Default ${DEFAULT_DRAIN_TIMEOUT_MS} (${DEFAULT_DRAIN_TIMEOUT_MS / 60_000} minutes).`,
      ),
  }),
  DRAIN_TIMEOUT_ONLY_FOR_DRAIN,
).prefault({});

export const MemberResultSchema = z.strictObject({
  agentId: AgentId,
  outcome: z.enum(["applied", "noop", "failed"]),
  error: z.string().optional(),
});
export const ControlResponseSchema = z
  .strictObject({ results: z.array(MemberResultSchema) })
  .describe("One result per affected agent, in the order they were processed.");
export const DeliverySchema = z
  .enum(["steer", "turn", "queued"])
  .describe(
    'How the message reached the agent: "steer" (into the running turn), "turn" (it was idle: a new turn started) or "queued" (paused: it gets it on resume).',
  );
export const SteerResponseSchema = ControlResponseSchema.extend({ delivery: DeliverySchema });

const WAIT_MESSAGE = `must be an integer number of seconds 0..${MAX_WAIT_SECONDS}`;
/** Unknown query parameters are ignored (proxies and cache-busters add them); known ones are checked. */
export const ResultQuery = z.object({
  wait: queryInteger(
    /^\d{1,3}$/,
    z.number().int(WAIT_MESSAGE).min(0, WAIT_MESSAGE).max(MAX_WAIT_SECONDS, WAIT_MESSAGE),
    WAIT_MESSAGE,
  )
    .default(0)
    .describe(
      `Seconds to hold the request while the result is pending, an integer 0..${MAX_WAIT_SECONDS} (default 0: answer at once). It answers as soon as the result settles.`,
    ),
});

export const ResultViewSchema = z
  .strictObject({
    agentId: AgentId,
    state: z.enum(["settled", "pending"]),
    outcome: OutcomeSchema.nullable(),
    resultRef: z.string().nullable(),
    result: z.string().nullable(),
  })
  .describe("Spec section 2.4.");
/** The 200 of the result route. */
export const SettledResultSchema = ResultViewSchema.extend({ state: z.literal("settled"), outcome: OutcomeSchema });
/** The 202 of the result route: still pending after the wait. */
export const PendingResultSchema = ResultViewSchema.extend({
  state: z.literal("pending"),
  outcome: z.null(),
  resultRef: z.null(),
  result: z.null(),
});

const SCOPE = "`scope` is `agent` (default) or `subtree`.";
const CONTROL = "Answered once every member answered and the events the request caused are committed.";

export const getAgent = operation({
  method: "get",
  path: "/agents/{agentId}",
  operationId: "getAgent",
  tag: "agents",
  summary: "An agent's view",
  ok: {
    200: {
      description: "The agent view with its budget and, when the harness answers in time, its session statistics.",
      json: AgentDetailSchema,
    },
  },
  errors: { 404: "Agent does not exist." },
});

export const getAgentMachine = operation({
  method: "get",
  path: "/agents/{agentId}/machine",
  operationId: "getAgentMachine",
  tag: "agents",
  summary: "An agent's state machine",
  description: "State value, tags and latest transitions of the agent's machine as the daemon runs it.",
  ok: { 200: { description: "The machine.", json: MachineViewSchema } },
  errors: { 404: "Agent does not exist." },
});

export const setBudget = operation({
  method: "post",
  path: "/agents/{agentId}/budget",
  operationId: "setBudget",
  tag: "agents",
  summary: "Set an agent's spend caps",
  description: "New absolute caps for the agent's subtree; `null` lifts its own cap. Resumes nothing.",
  body: requestBody(SetBudgetBody, {
    caps: {
      summary: "New absolute caps for the agent's subtree: 200,000 tokens and $5",
      value: { maxTokens: 200_000, maxCostUsd: 5 },
    },
    lift: { summary: "Lift the agent's own dollar cap (its ancestors' still bound it)", value: { maxCostUsd: null } },
  }),
  ok: { 200: { description: "The new caps, committed as `budget_changed`.", json: BudgetAnswerSchema } },
  errors: {
    400: "Neither `maxTokens` nor `maxCostUsd`, another field, or a value out of range.",
    404: "No such agent.",
    409: "A cap would leave the agent more than its parent has left (`BUDGET_EXCEEDS_PARENT`).",
  },
});

export const promptAgent = operation({
  method: "post",
  path: "/agents/{agentId}/prompt",
  operationId: "promptAgent",
  tag: "agents",
  summary: "Start a turn",
  description: "Runs after the current turn when busy, on resume when paused, once running when not yet running.",
  body: requestBody(PromptBody, {
    prompt: { summary: "A new turn", value: { text: "Summarise what you changed, in three lines." } },
  }),
  ok: { 202: { description: "The prompt was accepted.", json: PromptAcceptedSchema } },
  errors: { 400: "Invalid body.", 404: "No such agent.", 409: "Agent not live, or draining (`AGENT_DRAINING`)." },
});

export const steerAgent = operation({
  method: "post",
  path: "/agents/{agentId}/steer",
  operationId: "steerAgent",
  tag: "agents",
  summary: "Steer the current turn",
  description: `${SCOPE} With \`subtree\` the named agent gets one message with a table of its children. ${CONTROL}`,
  body: requestBody(SteerBody, {
    agent: { summary: "Guidance into the running turn", value: { message: "Focus on the failing test first." } },
    subtree: {
      summary: "Re-plan: the agent gets the message with a table of its children",
      value: { message: "Stop the slow branch; merge what works.", scope: "subtree" },
    },
  }),
  ok: {
    202: { description: "One result per member, and how the message reached the agent.", json: SteerResponseSchema },
  },
  errors: {
    400: "Invalid body or scope.",
    404: "No such agent.",
    409: "Agent not live, or draining (`AGENT_DRAINING`).",
    502: "The harness did not accept the message (`HARNESS_REJECTED`).",
  },
});

export const pauseAgent = operation({
  method: "post",
  path: "/agents/{agentId}/pause",
  operationId: "pauseAgent",
  tag: "agents",
  summary: "Pause (freeze) an agent or subtree",
  description: `${SCOPE} The body is optional. ${CONTROL}`,
  body: requestBody(
    ScopeBody,
    {
      agent: { summary: "This agent only", value: { scope: "agent" } },
      subtree: { summary: "It and every agent under it, parents first", value: { scope: "subtree" } },
    },
    true,
  ),
  ok: { 202: { description: "One result per member, parents first.", json: ControlResponseSchema } },
  errors: {
    400: "Invalid scope.",
    404: "No such agent.",
    409: "Agent not live.",
    502: "The sandbox could not be paused (scope `agent` only).",
  },
});

export const resumeAgent = operation({
  method: "post",
  path: "/agents/{agentId}/resume",
  operationId: "resumeAgent",
  tag: "agents",
  summary: "Resume a paused agent or subtree",
  description: `${SCOPE} The body is optional. ${CONTROL}`,
  body: requestBody(
    ScopeBody,
    {
      agent: { summary: "This agent only", value: { scope: "agent" } },
      subtree: { summary: "It and the paused agents under it, children first", value: { scope: "subtree" } },
    },
    true,
  ),
  ok: { 202: { description: "One result per member, children first.", json: ControlResponseSchema } },
  errors: {
    400: "Invalid scope.",
    404: "No such agent.",
    409: "Agent not paused (`AGENT_NOT_PAUSED`), or not live (`AGENT_NOT_LIVE`).",
    502: "The sandbox could not be resumed (scope `agent` only).",
  },
});

export const stopAgent = operation({
  method: "post",
  path: "/agents/{agentId}/stop",
  operationId: "stopAgent",
  tag: "agents",
  summary: "Stop an agent or subtree: abort now, or drain",
  description: `${SCOPE} \`mode\` is \`abort\` (default) or \`drain\`; \`drainTimeoutMs\` is for \`drain\` only. The body is optional. A stop of an ended agent answers \`noop\`.`,
  body: requestBody(
    StopBody,
    {
      abort: { summary: "Abort now: the agent and its subtree, leaves first", value: { scope: "subtree" } },
      drain: {
        summary: "Drain: no new work; each ends once its turns settle, aborted after a minute",
        value: { mode: "drain", scope: "subtree", drainTimeoutMs: 60_000 },
      },
    },
    true,
  ),
  ok: { 202: { description: "One result per member (leaves first for an abort).", json: ControlResponseSchema } },
  errors: {
    400: 'Invalid `mode`, `scope` or `drainTimeoutMs`, or `drainTimeoutMs` without `mode: "drain"`.',
    404: "No such agent.",
  },
});

export const getResult = operation({
  method: "get",
  path: "/agents/{agentId}/result",
  operationId: "getResult",
  tag: "agents",
  summary: "Read or wait for an agent's result",
  description: "Other query parameters are ignored. A client that disconnects ends its wait.",
  query: ResultQuery,
  ok: {
    200: { description: "Settled: the newest settled turn's result.", json: SettledResultSchema },
    202: { description: "Still pending after the wait.", json: PendingResultSchema },
  },
  errors: { 400: `\`wait\` not an integer 0..${MAX_WAIT_SECONDS}.`, 404: "Agent does not exist." },
});

export type PausedBy = z.output<typeof PausedBySchema>;
/** Spec section 2.2. */
export type AgentView = z.output<typeof AgentViewSchema>;
/** `GET /agents/{agentId}`: the view, its budget, and `sessionStats` when the harness answers in time. */
export type AgentDetail = z.output<typeof AgentDetailSchema>;
export type MachineTransition = z.output<typeof MachineTransitionSchema>;
/** `GET /agents/{agentId}/machine`. */
export type MachineView = z.output<typeof MachineViewSchema>;
/** New caps for `POST /agents/{agentId}/budget`: a number sets one, `null` lifts the agent's own. */
export type CapChange = z.output<typeof SetBudgetBody>;
export type StopRequest = z.output<typeof StopBody>;
export type StopMode = StopRequest["mode"];
export type MemberResult = z.output<typeof MemberResultSchema>;
export type ControlResponse = z.output<typeof ControlResponseSchema>;
export type Delivery = z.output<typeof DeliverySchema>;
/** Spec section 2.4. */
export type ResultView = z.output<typeof ResultViewSchema>;
