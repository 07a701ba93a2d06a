import { z } from "zod";
import { MAX_PERMISSION_MESSAGE_CHARS } from "../client/swarm-client.ts";
import { AgentSpecSchema } from "../spec/agent-spec.ts";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_RUN_LIST_LIMIT,
  MAX_DRAIN_TIMEOUT_MS,
  MAX_RUN_LIST_LIMIT,
  MAX_WAIT_SECONDS,
} from "../swarm-api.ts";

/**
 * Input schemas of the bridge's tools. Descriptions are written for the model calling them: what
 * each field does, its limits, and where its value comes from (which other tool returns it).
 */

const runId = z.string().min(1).describe('Run id, "r_<hex>", as returned by swarm_create_run.');
const agentId = z
  .string()
  .min(1)
  .describe('Agent id, "a_<hex>", as returned by swarm_create_run (rootAgentId), swarm_spawn_agent or swarm_get_run.');
const scope = z
  .enum(["agent", "subtree"])
  .default("agent")
  .describe('"agent" (default) acts on this agent only; "subtree" acts on it and every agent spawned under it.');
const maxTokens = z
  .number()
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER)
  .describe(
    "Most tokens (input, output and cache, summed over every model call) the agent and all its descendants may use.",
  );
const maxCostUsd = z
  .number()
  .min(0)
  .max(1e9)
  .describe("Most US dollars the model calls of the agent and all its descendants may cost.");
const budget = z
  .object({
    spawnDepth: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("How many levels of children may be spawned below (can only tighten the spec's or parent's budget)."),
    maxAgents: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("Most descendants allowed (can only tighten the spec's or parent's budget)."),
    maxTokens: maxTokens
      .optional()
      .describe(`${maxTokens.description} Can only tighten the spec's cap or what the parent has left.`),
    maxCostUsd: maxCostUsd
      .optional()
      .describe(`${maxCostUsd.description} Can only tighten the spec's cap or what the parent has left.`),
  })
  .describe(
    "Optional budget override: spawn limits and spend caps. An agent that runs out of a spend cap is paused, with its subtree, until the cap is raised (swarm_set_budget) and it is resumed.",
  );
const spec = AgentSpecSchema.describe(
  'Agent spec, inline. "name" (1..64 of [A-Za-z0-9._-]) plus exactly one of "model" ({provider, id}, e.g. {"provider":"anthropic","id":"claude-sonnet-4-5"}) or "script" (scripted responses for tests: [] echoes the prompt). Optional: systemPrompt, tools, spawnDepth, maxAgents, maxTokens, maxCostUsd (spend caps of its subtree), env. Give this or specName, not both.',
);
const specName = z
  .string()
  .min(1)
  .describe("Name of a spec saved with swarm_spec_add (see swarm_spec_list). Give this or spec, not both.");
const keepAlive = z
  .boolean()
  .optional()
  .describe(
    "Keep the agent live and idle after its turns until stopped, so it can be prompted again. Without it an idle agent with no live children ends.",
  );

export const CreateRunInput = z.object({
  spec: spec.optional(),
  specName: specName.optional(),
  prompt: z
    .string()
    .min(1)
    .optional()
    .describe(
      "First task for the root agent, run once its sandbox is ready. Without it the root waits for swarm_prompt_agent.",
    ),
  budget: budget.optional(),
  keepAlive,
});

export const RunIdInput = z.object({ runId });

export const ListRunsInput = z.object({
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_RUN_LIST_LIMIT)
    .default(DEFAULT_RUN_LIST_LIMIT)
    .describe(`Most runs to return, the newest ones, 1..${MAX_RUN_LIST_LIMIT} (default ${DEFAULT_RUN_LIST_LIMIT}).`),
});

export const DeleteRunInput = z.object({
  runId,
  purge: z
    .boolean()
    .default(false)
    .describe(
      "Also remove the run for good once its agents are stopped: its events, results and sandbox folders. The run no longer exists afterwards (swarm_get_run answers 404). Default false: the run's tree and events stay readable.",
    ),
});

export const WatchEventsInput = z.object({
  runId,
  afterSeq: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Only events with a seq above this. 0 (default) starts at the beginning of the run; pass the lastSeq of the previous call to continue.",
    ),
  maxWaitSeconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .default(20)
    .describe(
      `How long to wait for new events, 0..${MAX_WAIT_SECONDS} s (default 20). Returns earlier when maxEvents is reached, an untilTypes event arrives or every agent of the run has ended. 0 returns only what already happened. If your tool calls time out sooner, use a shorter wait and call again with afterSeq = lastSeq.`,
    ),
  maxEvents: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(100)
    .describe("Most events to return in one call (default 100)."),
  untilTypes: z
    .array(z.string().min(1))
    .optional()
    .describe('Return as soon as an event of one of these types arrives, e.g. ["handle_settled", "agent_ended"].'),
  includeEphemeral: z
    .boolean()
    .default(false)
    .describe(
      "Also return ephemeral events (text deltas, tool output updates). Off by default: they are many and carry no seq.",
    ),
});

export const SpawnAgentInput = z.object({
  runId,
  parentAgentId: z.string().min(1).describe("The live agent of this run whose sandbox is forked for the child."),
  spec: spec.optional(),
  specName: specName.optional(),
  prompt: z.string().min(1).optional().describe("Task for the child, run once it is ready."),
  waitFor: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "Agents of this run whose results must settle before the child is forked; their results appear as /inputs/<agentId>.md in its sandbox.",
    ),
  budget: budget.optional(),
  idempotencyKey: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("Retrying with the same key returns the original child instead of spawning another."),
  keepAlive,
});

export const AgentIdInput = z.object({ agentId });

export const PromptAgentInput = z.object({
  agentId,
  text: z
    .string()
    .min(1)
    .describe("The prompt: starts a new turn on a live agent. Follow it with swarm_get_result or swarm_watch_events."),
});

export const SteerAgentInput = z.object({
  agentId,
  message: z
    .string()
    .min(1)
    .describe(
      "Guidance delivered into the running turn after its current tool calls finish. With scope subtree, the agent gets it with a table of its children and is asked to re-plan.",
    ),
  scope,
});

export const ControlInput = z.object({ agentId, scope });

export const StopAgentInput = z
  .object({
    agentId,
    scope,
    mode: z
      .enum(["abort", "drain"])
      .default("abort")
      .describe(
        '"abort" (default) ends the current turn at once. "drain" waits for the running turn, then ends the agent as done; aborted at the deadline (drainTimeoutMs). A draining agent takes no new prompt, steer or spawn (HTTP 409).',
      ),
    drainTimeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(MAX_DRAIN_TIMEOUT_MS)
      .optional()
      .describe(
        `Mode "drain" only: how long, in ms (1000..${MAX_DRAIN_TIMEOUT_MS}), the agents may take to finish their turn before they are aborted. Default ${DEFAULT_DRAIN_TIMEOUT_MS} (${DEFAULT_DRAIN_TIMEOUT_MS / 60_000} minutes).`,
      ),
  })
  .refine((input) => input.drainTimeoutMs === undefined || input.mode === "drain", {
    message: 'drainTimeoutMs is only for mode "drain".',
    path: ["drainTimeoutMs"],
  });

export const SetBudgetInput = z
  .object({
    agentId,
    maxTokens: maxTokens.optional().describe(`${maxTokens.description} The new absolute cap, not an increment.`),
    maxCostUsd: maxCostUsd.optional().describe(`${maxCostUsd.description} The new absolute cap, not an increment.`),
  })
  .refine((input) => input.maxTokens !== undefined || input.maxCostUsd !== undefined, {
    message: "Give maxTokens, maxCostUsd or both.",
  });

export const ListPermissionsInput = z.object({
  runId,
  state: z
    .enum(["pending", "resolved", "all"])
    .default("pending")
    .describe(
      '"pending" (default): requests waiting for a decision; "resolved": decided ones (decision, by, message); "all": both. Oldest first.',
    ),
});

export const ResolvePermissionInput = z.object({
  agentId: z.string().min(1).describe("The agent that asked: the agentId of the request in swarm_list_permissions."),
  requestId: z.string().min(1).describe('Approval request id, "p_<hex>", as returned by swarm_list_permissions.'),
  decision: z.enum(["allow", "deny"]).describe('"allow" runs the held tool call; "deny" makes it fail.'),
  message: z
    .string()
    .min(1)
    .max(MAX_PERMISSION_MESSAGE_CHARS)
    .optional()
    .describe(
      `For a deny: what the agent's model is told as the tool call's error (1..${MAX_PERMISSION_MESSAGE_CHARS} characters), e.g. why, or what to do instead.`,
    ),
});

export const GetResultInput = z.object({
  agentId,
  waitSeconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .default(0)
    .describe(
      `How long to wait for a pending result, 0..${MAX_WAIT_SECONDS} s (default 0: answer at once). Returns as soon as it settles. If your tool calls time out sooner, use a shorter wait and call again.`,
    ),
});

export const StartServiceInput = z.object({
  runtime: z
    .enum(["process", "docker"])
    .optional()
    .describe(
      'Sandbox runtime: "process" (embedded, the default unless SWARM_RUNTIME says otherwise) or "docker" (the daemon runs in a container and sandboxes are containers; needs a Docker engine).',
    ),
  waitSeconds: z
    .number()
    .int()
    .min(1)
    .max(240)
    .default(60)
    .describe("How long to wait for the service to answer /health (default 60)."),
});

export const SpecAddInput = z.object({
  spec: AgentSpecSchema.describe(
    'The agent spec to save (validated now): "name" plus exactly one of "model" or "script".',
  ),
  name: z.string().min(1).max(64).optional().describe("Name to save it under; defaults to the spec's own name."),
  overwrite: z.boolean().default(true).describe("Replace a saved spec of the same name (default true)."),
});

export const SpecListInput = z.object({});

export const SpecRemoveInput = z.object({
  name: z.string().min(1).describe("Name of the saved spec to remove (see swarm_spec_list)."),
});
