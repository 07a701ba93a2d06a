import { z } from "zod";
import { AGENT_STATES, OUTCOMES } from "./limits.ts";

/** Shapes more than one route shares: ids, counts, scope, usage, spend, and the error body. */

export const Int = z.number().int();
export const Epoch = Int.min(0).describe("Epoch milliseconds.");
export const RunId = z.string().describe("Form `r_<hex>`.");
export const AgentId = z.string().describe("Form `a_<hex>`.");
export const RequestId = z.string().describe("Form `p_<hex>`.");

/** Path parameters of the routes (`{runId}` in an operation's path): the form each must have, and what it names. */
export const PATH_PARAMS = {
  runId: {
    pattern: /^r_[0-9a-f]+$/,
    description: "A run's id, `r_<hex>`. Any other form is answered as an unknown run (404).",
  },
  agentId: {
    pattern: /^a_[0-9a-f]+$/,
    description: "An agent's id, `a_<hex>`. Any other form is answered as an unknown agent (404).",
  },
  requestId: {
    pattern: /^p_[0-9a-f]+$/,
    description: "An approval request's id, `p_<hex>`. Any other form is answered as an unknown request (404).",
  },
} as const;
export type PathParamName = keyof typeof PATH_PARAMS;

/**
 * The ids the document's examples use (path parameters and ids inside example bodies): stand-ins
 * a caller replaces with its own run's, agent's and request's.
 */
export const EXAMPLE_IDS = {
  runId: "r_0123456789abcdef",
  agentId: "a_0123456789abcdef",
  requestId: "p_0123456789abcdef01234567",
} as const satisfies Record<PathParamName, string>;

/** In an example body, a second agent (a fork child the example's agent adopts from), beside `EXAMPLE_IDS.agentId`. */
export const EXAMPLE_CHILD_ID = "a_fedcba9876543210";

export const AgentStateSchema = z.enum(AGENT_STATES);
export const OutcomeSchema = z.enum(OUTCOMES);

/** A non-empty string field of a body. */
export const Text = z.string().min(1, "must not be empty");
export const AgentIdValue = z.string().min(1, "must not be empty");
export const ScopeSchema = z
  .enum(["agent", "subtree"], { error: 'must be "agent" or "subtree"' })
  .default("agent")
  .describe('"agent" (default) acts on this agent only; "subtree" acts on it and every agent spawned under it.');

/**
 * A query parameter holding a whole number: its text must match `digits`, then it is the number
 * `value` checks. Clients that are not HTTP (the tool bridge) take `value` itself.
 */
export const queryInteger = <V extends z.ZodNumber>(digits: RegExp, value: V, message: string) =>
  z.string().regex(digits, message).transform(Number).pipe(value);

/** Where a fork was made: after a settled turn of the forked agent, or at a `spawn_agent` call inside a turn. */
export const ForkPointSchema = z
  .strictObject({
    turn: Int.min(0).describe(
      "The forked agent's settled turns at the fork (0: before its first); for a fork from inside a turn, the number of that turn.",
    ),
    toolCallId: z
      .string()
      .optional()
      .describe("Only for a fork from inside a turn: the `spawn_agent` call it was made from."),
  })
  .describe("The conversation and /work a fork child started from.");

export const ForkedFromSchema = z
  .strictObject({ agentId: AgentId.describe("The agent it was forked from (its parent)."), forkPoint: ForkPointSchema })
  .describe("Only on a fork child: the agent and point it was forked from.");

export type ForkPoint = z.output<typeof ForkPointSchema>;
export type ForkedFrom = z.output<typeof ForkedFromSchema>;
export type Scope = z.output<typeof ScopeSchema>;
export type Outcome = z.output<typeof OutcomeSchema>;

export const ErrorBodySchema = z
  .strictObject({ error: z.string() })
  .describe("Every refusal: the message, and nothing else (spec section 7).");
export const HealthSchema = z.strictObject({ ok: z.literal(true) });
export const HealthFaultSchema = z
  .strictObject({
    ok: z.literal(false),
    error: z
      .enum(["STORAGE_FULL", "INTERNAL"])
      .describe("`STORAGE_FULL`: the data folder's disk has no room; `INTERNAL`: another write error."),
  })
  .describe("The daemon answers, but writes to its data folder fail (spec section 7).");

export const UsageSchema = z
  .strictObject({
    inputTokens: Int.min(0),
    outputTokens: Int.min(0),
    cacheReadTokens: Int.min(0),
    cacheWriteTokens: Int.min(0),
    costUsd: z.number().min(0),
    calls: Int.min(0),
  })
  .describe(
    "Model usage summed over `model_usage` events (an agent's own, its subtree's, or a run's); `calls` is their number. Tokens of every kind count toward `maxTokens`.",
  );

export const SpendViewSchema = z
  .strictObject({
    maxTokens: Int.nullable(),
    maxCostUsd: z.number().nullable(),
    remainingTokens: Int.nullable(),
    remainingCostUsd: z.number().nullable(),
  })
  .describe("The agent's own caps and what it may still spend under them and every ancestor's; null: no cap.");
/** Model usage summed over calls (an agent's own, its subtree's, or a run's). */
export type Usage = z.output<typeof UsageSchema>;
/** An agent's spend caps and what is left of them (null: no cap on that dimension, here or above). */
export type SpendView = z.output<typeof SpendViewSchema>;
