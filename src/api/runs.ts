import { z } from "zod";
import { AgentSpecSchema, BudgetSchema } from "../spec/agent-spec.ts";
import { AgentViewSchema } from "./agents.ts";
import {
  AgentId,
  AgentIdValue,
  AgentStateSchema,
  Epoch,
  EXAMPLE_IDS,
  Int,
  queryInteger,
  RunId,
  Text,
  UsageSchema,
} from "./fields.ts";
import { DEFAULT_RUN_LIST_LIMIT, MAX_RUN_LIST_LIMIT } from "./limits.ts";
import { operation, requestBody } from "./operation.ts";

/** A run's routes (spec sections 2.1 and 4.1 to 4.5, 4.18): create, list, read, delete, spawn into. */

const keepAlive = z
  .boolean()
  .optional()
  .describe(
    "Keep the agent live and idle after its turns until stopped, so it can be prompted again. Without it an idle agent with no live children ends.",
  );
const budget = BudgetSchema.optional().describe(
  "Overrides of the spec's (or the parent's remaining) spawn limits and spend caps; each can only tighten. An agent that runs out of a spend cap is paused, with its subtree, until the cap is raised and it is resumed.",
);

export const CreateRunBody = z.strictObject({
  spec: AgentSpecSchema.describe("The root agent's spec (spec section 2.5)."),
  prompt: Text.optional().describe(
    "First task for the root agent, run once its sandbox is ready. Without it the root waits to be prompted.",
  ),
  budget,
  keepAlive,
});
export const CreateRunResponseSchema = z.strictObject({
  runId: RunId,
  rootAgentId: AgentId,
  state: z.literal("provisioning"),
});

export const SpawnBody = z.strictObject({
  parentAgentId: AgentIdValue.describe("The live agent of this run whose sandbox is forked for the child."),
  spec: AgentSpecSchema.describe("The child's spec (spec section 2.5)."),
  prompt: Text.optional().describe("Task for the child, run once it is ready."),
  waitFor: z
    .array(AgentIdValue)
    .optional()
    .describe(
      "Agents of this run whose results must settle before the child is forked; their results appear as /inputs/<agentId>.md in its sandbox.",
    ),
  budget,
  idempotencyKey: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("Retrying with the same key returns the original child instead of spawning another."),
  keepAlive,
});
export const SpawnResponseSchema = z.strictObject({ agentId: AgentId, state: z.enum(["provisioning", "spawning"]) });

const LIMIT_MESSAGE = `must be an integer 1..${MAX_RUN_LIST_LIMIT}`;
/** `GET /runs?limit=`. */
export const RunListQuery = z.object({
  limit: queryInteger(
    /^\d{1,4}$/,
    z.number().int(LIMIT_MESSAGE).min(1, LIMIT_MESSAGE).max(MAX_RUN_LIST_LIMIT, LIMIT_MESSAGE),
    LIMIT_MESSAGE,
  )
    .optional()
    .describe(
      `Most runs to answer, the newest ones, an integer 1..${MAX_RUN_LIST_LIMIT} (default ${DEFAULT_RUN_LIST_LIMIT}).`,
    ),
});

export const RunSummarySchema = z
  .strictObject({
    runId: RunId,
    rootAgentId: AgentId,
    specName: z.string().describe("The root's spec name."),
    createdAt: Epoch.describe("When the run was created (its root's `agent_spawned`), epoch milliseconds."),
    states: z
      .record(AgentStateSchema, Int.min(0))
      .describe("How many of its agents are in each state, every state named."),
    agents: Int.min(0).describe("Its agents in all."),
    live: Int.min(0).describe("Its agents live now."),
    usage: UsageSchema,
  })
  .describe("One run at a glance.");
export const RunListSchema = z.strictObject({ runs: z.array(RunSummarySchema).describe("Newest first.") });

export const RunSnapshotSchema = z
  .strictObject({
    runId: RunId,
    rootAgentId: AgentId,
    asOf: Int.min(0).describe("The highest ledger `seq` reflected; pass it as `Last-Event-ID` to stream what follows."),
    agents: z.array(AgentViewSchema),
    usage: UsageSchema.describe("Every model call of the run, summed."),
  })
  .describe("Spec section 2.1 (snapshot form).");

/** `purge` is "true" or "false" and nothing else: a typo must not delete less, or more, than was meant. */
export const DeleteRunQuery = z.object({
  purge: z
    .enum(["true", "false"], { error: 'must be "true" or "false"' })
    .transform((value) => value === "true")
    .pipe(z.boolean())
    .default(false)
    .describe(
      "`true` also removes the run for good once its agents are stopped: its ledger, results and sandbox folders (a later request naming it is a 404). `false` (default) keeps them readable.",
    ),
});

export const createRun = operation({
  method: "post",
  path: "/runs",
  operationId: "createRun",
  tag: "runs",
  summary: "Create a run",
  description:
    "Creates the root agent and provisions its sandbox in the background; `prompt`, when given, is its first turn.",
  body: requestBody(CreateRunBody, {
    scripted: {
      summary: "A scripted agent (no model, no key): it answers the prompt from its script and ends",
      value: { spec: { name: "echo", script: [{ text: "hello: {{lastUserMessage}}" }] }, prompt: "say hello" },
    },
    family: {
      summary: "A scripted root that spawns a child with its spawn_agent tool, then ends once the child has",
      value: {
        spec: {
          name: "lead",
          script: [
            { tool: "spawn_agent", args: { spec: { name: "helper", script: [] }, prompt: "hello from the lead" } },
            { text: "spawned a helper" },
          ],
        },
        prompt: "start",
        budget: { maxAgents: 4 },
      },
    },
    model: {
      summary:
        "A real model, capped at $2 for its subtree; without a prompt it waits (POST /agents/{agentId}/prompt), and GET /models lists the models",
      value: {
        spec: {
          name: "coder",
          model: { provider: "anthropic", id: "claude-sonnet-4-5" },
          systemPrompt: "You are a careful engineer.",
        },
        budget: { maxCostUsd: 2, maxTokens: 2_000_000 },
      },
    },
  }),
  ok: { 202: { description: "The run was created; its root is provisioning.", json: CreateRunResponseSchema } },
  errors: {
    400: "Invalid body, the spec above the daemon's limits, or a `model` the service does not know or does not carry.",
  },
});

export const listRuns = operation({
  method: "get",
  path: "/runs",
  operationId: "listRuns",
  tag: "runs",
  summary: "List runs",
  description: "Every run the daemon knows, newest first, with its agents counted by state.",
  query: RunListQuery,
  ok: { 200: { description: "The runs.", json: RunListSchema } },
  errors: { 400: `\`limit\` not an integer 1..${MAX_RUN_LIST_LIMIT}.` },
});

export const getRun = operation({
  method: "get",
  path: "/runs/{runId}",
  operationId: "getRun",
  tag: "runs",
  summary: "Snapshot of a run",
  description: "Every agent of the run, ended ones included: the fold of its ledger up to `asOf`.",
  ok: { 200: { description: "The snapshot.", json: RunSnapshotSchema } },
  errors: { 404: "Run does not exist." },
});

export const deleteRun = operation({
  method: "delete",
  path: "/runs/{runId}",
  operationId: "deleteRun",
  tag: "runs",
  summary: "Stop a run, or purge it",
  description:
    "Stops every live agent of the run, leaves first. The ledger and results are kept unless `purge=true`, which then removes the run for good.",
  query: DeleteRunQuery,
  ok: { 204: { description: "The run is stopped (and purged when asked).", empty: true } },
  errors: {
    400: "`purge` other than `true` or `false`.",
    404: "Run does not exist (or was purged).",
    503: "A sandbox could not be closed (`RUNTIME_UNAVAILABLE`); the purge finishes on the next start.",
  },
});

export const spawnAgent = operation({
  method: "post",
  path: "/runs/{runId}/agents",
  operationId: "spawnAgent",
  tag: "runs",
  summary: "Spawn a child",
  description:
    "Forks a live parent's sandbox. A spawn a budget refuses still answers 202; the child then ends `budget-exceeded`.",
  body: requestBody(SpawnBody, {
    scripted: {
      summary: "A scripted child of a live agent, forked from its sandbox, kept live after its turn",
      value: {
        parentAgentId: EXAMPLE_IDS.agentId,
        spec: { name: "helper", script: [{ text: "on it: {{lastUserMessage}}" }] },
        prompt: "check the tests",
        keepAlive: true,
      },
    },
    capped: {
      summary: "A child with tighter budgets than its parent's, and a key that makes a retry return the same child",
      value: {
        parentAgentId: EXAMPLE_IDS.agentId,
        spec: { name: "worker", script: [] },
        prompt: "echo me",
        budget: { spawnDepth: 0, maxTokens: 50_000, maxCostUsd: 0.5 },
        idempotencyKey: "worker-1",
      },
    },
  }),
  ok: {
    202: {
      description: "The child was accepted (`spawning` while it waits for `waitFor`).",
      json: SpawnResponseSchema,
    },
  },
  errors: {
    400: "Invalid body, `waitFor` names an agent outside this run, the spec asks for more than the parent has, or a `model` the service does not know or does not carry.",
    404: "The run does not exist, or `parentAgentId` is not an agent of this run.",
    409: "The parent is not live, or is draining (`AGENT_DRAINING`).",
  },
});

export type CreateRunRequest = z.output<typeof CreateRunBody>;
export type CreateRunResponse = z.output<typeof CreateRunResponseSchema>;
export type SpawnRequest = z.output<typeof SpawnBody>;
export type SpawnResponse = z.output<typeof SpawnResponseSchema>;
/** `GET /runs`: one run at a glance. */
export type RunSummary = z.output<typeof RunSummarySchema>;
/** Spec section 2.1 (snapshot form). */
export type RunSnapshot = z.output<typeof RunSnapshotSchema>;
/** A request's `budget`: overrides of the spec's (or the parent's remaining) spawn limits and spend caps. */
export type BudgetOverride = z.output<typeof BudgetSchema>;
export type SpendCaps = Pick<BudgetOverride, "maxTokens" | "maxCostUsd">;
