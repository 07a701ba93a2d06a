import { z } from "zod";
import { AgentSpecSchema, BudgetSchema } from "../spec/agent-spec.ts";
import {
  AgentId,
  AgentIdValue,
  EXAMPLE_CHILD_ID,
  EXAMPLE_IDS,
  ForkedFromSchema,
  Int,
  OutcomeSchema,
  Text,
} from "./fields.ts";
import {
  DEFAULT_WAIT_MANY_MS,
  MAX_DIFF_BYTES,
  MAX_DIFF_BYTES_PER_FILE,
  MAX_FORK_COPIES,
  MAX_WAIT_AGENTS,
  MAX_WAIT_MANY_MS,
} from "./limits.ts";
import { operation, requestBody } from "./operation.ts";
import { withRules } from "./rules.ts";

/**
 * Forks (spec section 4.23 to 4.26): fork an agent, conversation and all, into copies that each
 * try their own prompt; wait for several agents; compare a fork child's changes; adopt them.
 */

const spec = AgentSpecSchema.shape;

/** What of the forked agent's spec a fork may change for its children; the rest is the forked agent's. */
export const ForkSpecSchema = withRules(
  z.strictObject({
    name: spec.name.optional().describe("The children's spec name; default the forked agent's."),
    model: spec.model.describe("A model instead of the forked agent's model or script."),
    script: spec.script.describe(
      "A script instead of the forked agent's model or script; it starts at its first step.",
    ),
    approve: spec.approve.describe("Approval rules added to the forked agent's policy."),
    limits: spec.limits.describe("Tighter limits than the forked agent's."),
    maxTokens: spec.maxTokens,
    maxCostUsd: spec.maxCostUsd,
  }),
  { holds: (s) => s.model === undefined || s.script === undefined, path: "model", message: "and script: give one" },
);

const FORK_COUNT_MESSAGE = `must be an integer 1..${MAX_FORK_COPIES}`;
export const ForkBody = withRules(
  z.strictObject({
    prompts: z
      .array(Text)
      .min(1, `must hold 1..${MAX_FORK_COPIES} prompts`)
      .max(MAX_FORK_COPIES, `must hold 1..${MAX_FORK_COPIES} prompts`)
      .optional()
      .describe(`One child per prompt (1..${MAX_FORK_COPIES}), each its first turn.`),
    count: Int.min(1, FORK_COUNT_MESSAGE)
      .max(MAX_FORK_COPIES, FORK_COUNT_MESSAGE)
      .optional()
      .describe(`With \`prompt\`: this many children (1..${MAX_FORK_COPIES}), all given the same prompt.`),
    prompt: Text.optional().describe("With `count`: every child's first turn."),
    spec: ForkSpecSchema.optional().describe("Changes to the forked agent's spec for the children."),
    budget: BudgetSchema.optional().describe(
      "Overrides of the children's spawn limits and spend caps, as for a spawn; each can only tighten.",
    ),
    keepAlive: z
      .boolean()
      .default(true)
      .describe("Keep each child live and idle after its turn (default true), so they can be compared and adopted."),
  }),
  {
    holds: (b) => (b.prompts === undefined) !== (b.count === undefined && b.prompt === undefined),
    message: "give either prompts, or count and prompt",
    toolMessage: "Give either prompts, or count and prompt.",
  },
  {
    holds: (b) => (b.count === undefined) === (b.prompt === undefined),
    path: "count",
    message: "and prompt go together",
  },
);
export const ForkResponseSchema = z.strictObject({
  agentIds: z
    .array(AgentId)
    .describe(
      "The children, one per prompt, in order. One a budget refused is listed too: it ended `budget-exceeded`.",
    ),
});

export const FileChangeSchema = z
  .strictObject({
    path: z.string().describe("Relative to /work."),
    change: z.enum(["added", "modified", "deleted"]),
    kind: z
      .enum(["file", "dir", "symlink", "other"])
      .describe("What the entry is now (what it was, for a deleted one); `other` is a FIFO, socket or device."),
    size: Int.min(0).nullable().describe("Bytes now; null when deleted."),
    baseSize: Int.min(0).nullable().describe("Bytes at the fork point; null when added."),
    linkTarget: z.string().optional().describe("A link's target, as stored (never followed)."),
    diff: z.string().optional().describe(`A unified diff of a text file, at most ${MAX_DIFF_BYTES_PER_FILE} bytes.`),
    noDiff: z
      .string()
      .optional()
      .describe("Why a file has no diff: binary, too large, over the answer's budget, not readable."),
  })
  .describe("One entry the agent changed in /work since its fork point.");

export const ChangesSchema = z.strictObject({
  agentId: AgentId,
  forkedFrom: ForkedFromSchema,
  files: z.array(FileChangeSchema).describe("By path."),
  diffBytes: Int.min(0).describe(`Bytes of diff in this answer (at most ${MAX_DIFF_BYTES}).`),
});

export const AdoptBody = z.strictObject({
  from: AgentIdValue.describe("A direct fork child of this agent, live or ended."),
  onConflict: z
    .enum(["fail", "theirs"], { error: 'must be "fail" or "theirs"' })
    .default("fail")
    .describe(
      '"fail" (default): when a file was changed both by the child and by this agent since the fork, nothing is applied (409). "theirs": the child\'s version wins.',
    ),
});
export const AdoptResponseSchema = z.strictObject({
  agentId: AgentId,
  from: AgentId,
  files: z
    .array(z.strictObject({ path: z.string(), change: z.enum(["added", "modified", "deleted"]) }))
    .describe("What was applied to /work, by path."),
  skipped: z
    .array(z.strictObject({ path: z.string(), reason: z.string() }))
    .describe("Changes that cannot be applied (a FIFO, a name that is not UTF-8), with why."),
});

const WAIT_MS_MESSAGE = `must be an integer 1..${MAX_WAIT_MANY_MS}`;
export const WaitBody = z.strictObject({
  agentIds: z
    .array(AgentIdValue)
    .min(1, `must name 1..${MAX_WAIT_AGENTS} agents`)
    .max(MAX_WAIT_AGENTS, `must name 1..${MAX_WAIT_AGENTS} agents`)
    .describe("Agents of this run."),
  mode: z
    .enum(["all", "first"], { error: 'must be "all" or "first"' })
    .default("all")
    .describe(
      '"all" (default): wait until every agent settled. "first": answer as soon as one settles with outcome success.',
    ),
  stopOthers: z
    .boolean()
    .default(false)
    .describe("Once it answers, stop every listed agent still live but the winner (their spend stays counted)."),
  timeoutMs: Int.min(1, WAIT_MS_MESSAGE)
    .max(MAX_WAIT_MANY_MS, WAIT_MS_MESSAGE)
    .default(DEFAULT_WAIT_MANY_MS)
    .describe(`How long to wait, 1..${MAX_WAIT_MANY_MS} ms (default ${DEFAULT_WAIT_MANY_MS}).`),
});
export const WaitResultSchema = z.strictObject({
  agentId: AgentId,
  state: z.enum(["settled", "pending"]).describe("`pending`: no result yet when the wait ended."),
  outcome: OutcomeSchema.nullable(),
  result: z.string().nullable(),
});
export const WaitResponseSchema = z.strictObject({
  results: z
    .array(WaitResultSchema)
    .describe(
      '"all": every agent, in the order asked. "first": the winner alone, or every agent when none succeeded in time.',
    ),
  winner: AgentId.nullable().describe('"first": the first agent to settle with success; null otherwise.'),
});

export const forkAgent = operation({
  method: "post",
  path: "/agents/{agentId}/fork",
  operationId: "forkAgent",
  tag: "agents",
  summary: "Fork an agent, conversation and all",
  description:
    "Children of the agent, each starting from its conversation at its last settled turn and from its /work now, then given its own prompt. The agent must be between turns (idle, hibernated, or paused while idle). Budgets, approvals and limits apply as to any spawn.",
  body: requestBody(ForkBody, {
    prompts: {
      summary: "Three tries from one point, kept live to be compared",
      value: { prompts: ["try a recursive parser", "try a table-driven parser", "try a parser combinator"] },
    },
    count: {
      summary: "Four copies given the same prompt, on a scripted model, each under a spend cap",
      value: {
        count: 4,
        prompt: "make the failing test pass",
        spec: { script: [{ text: "done: {{lastUserMessage}}" }] },
        budget: { maxCostUsd: 0.5 },
      },
    },
  }),
  ok: { 202: { description: "The children were accepted.", json: ForkResponseSchema } },
  errors: {
    400: "Invalid body (no prompt, over 32, a spec override the agent cannot give), or a model the service does not know.",
    404: "No such agent.",
    409: "The agent is not live, draining (`AGENT_DRAINING`), or in a turn (`AGENT_BUSY`).",
    502: "Its files or conversation could not be copied (`SNAPSHOT_FAILED`).",
  },
});

export const getChanges = operation({
  method: "get",
  path: "/agents/{agentId}/changes",
  operationId: "getChanges",
  tag: "agents",
  summary: "What a fork child changed in /work",
  description: `Every file, link and folder the fork child added, modified or deleted since its fork point, with a unified diff of each text file (at most ${MAX_DIFF_BYTES_PER_FILE} bytes per file, ${MAX_DIFF_BYTES} in all). Also after the child ended, until its run is purged.`,
  ok: { 200: { description: "The changes.", json: ChangesSchema } },
  errors: { 404: "No such agent.", 409: "The agent was not made by a fork (`NOT_A_FORK`)." },
});

export const adoptChanges = operation({
  method: "post",
  path: "/agents/{agentId}/adopt",
  operationId: "adoptChanges",
  tag: "agents",
  summary: "Apply a fork child's changes to this agent's /work",
  description:
    "Applies what a direct fork child changed since its fork point onto this agent's /work, between turns, within its disk limit.",
  body: requestBody(AdoptBody, {
    fail: { summary: "Adopt a child's changes; refuse if both changed a file", value: { from: EXAMPLE_CHILD_ID } },
    theirs: {
      summary: "Adopt a child's changes; its version wins where both changed a file",
      value: { from: EXAMPLE_CHILD_ID, onConflict: "theirs" },
    },
  }),
  ok: { 200: { description: "What was applied.", json: AdoptResponseSchema } },
  errors: {
    400: "Invalid body, or `from` is not a fork child of this agent.",
    404: "No such agent.",
    409: "The agent is not live or in a turn (`AGENT_BUSY`); both changed a file (`ADOPT_CONFLICT`, listing them); over the disk limit (`DISK_LIMIT`).",
  },
});

export const waitForAgents = operation({
  method: "post",
  path: "/runs/{runId}/wait",
  operationId: "waitForAgents",
  tag: "runs",
  summary: "Wait for several agents: all, or the first success",
  description:
    "Holds until every agent settled (`all`), one settled with success (`first`), or `timeoutMs` passed; unfinished ones are then `pending`. A client that disconnects ends its wait.",
  body: requestBody(WaitBody, {
    first: {
      summary: "The first of three to succeed; stop the others",
      value: { agentIds: [EXAMPLE_IDS.agentId], mode: "first", stopOthers: true, timeoutMs: 60_000 },
    },
  }),
  ok: { 200: { description: "The results, and the winner for `first`.", json: WaitResponseSchema } },
  errors: { 400: "Invalid body, or an agent outside this run.", 404: "The run does not exist." },
});

export type ForkSpec = z.output<typeof ForkSpecSchema>;
export type ForkRequest = z.output<typeof ForkBody>;
export type ForkResponse = z.output<typeof ForkResponseSchema>;
export type FileChange = z.output<typeof FileChangeSchema>;
export type ChangesView = z.output<typeof ChangesSchema>;
export type AdoptRequest = z.output<typeof AdoptBody>;
export type AdoptResponse = z.output<typeof AdoptResponseSchema>;
export type WaitRequest = z.output<typeof WaitBody>;
export type WaitResult = z.output<typeof WaitResultSchema>;
export type WaitResponse = z.output<typeof WaitResponseSchema>;
