import { z } from "zod";
import { approveRuleSchema, MAX_APPROVE_RULES } from "./approve.ts";
import { TOOL_NAMES } from "./tool-names.ts";

/** One tool call a scripted model makes. */
const ScriptToolCallSchema = z.strictObject({
  tool: z.string().min(1),
  args: z.record(z.string(), z.unknown()).default({}),
});

/**
 * One scripted model response, consumed one per model call across the agent's whole life.
 * Text may contain `{{lastUserMessage}}` and `{{lastToolResult}}`, replaced at call time.
 */
const delayMs = z.number().int().min(0).max(3_600_000).optional();
const ScriptStepSchema = z.union([
  z.strictObject({ text: z.string(), delayMs }),
  z.strictObject({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()).default({}), delayMs }),
  z.strictObject({ tools: z.array(ScriptToolCallSchema).min(1), delayMs }),
]);

/** The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Variables that change how programs load or start (the dynamic loader's `LD_*`, node's, the
 * shells' start-up files, python's and perl's). A spec's env only ever reaches the sandbox, never a
 * host-side process; these are refused as well, in depth. `SWARMD_SANDBOX` tags a sandbox's processes and
 * `SWARMD_USER_NET` the daemon's network helpers: no spec may set either.
 */
const LOADER_VARIABLE =
  /^(LD_.*|NODE_OPTIONS|NODE_PATH|BASH_ENV|ENV|PYTHONSTARTUP|PERL5OPT|SWARMD_SANDBOX|SWARMD_USER_NET)$/;

const EnvSchema = z
  .record(
    z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .max(128),
    z
      .string()
      .max(64 * 1024)
      .refine((value) => !value.includes("\0"), "must not contain a NUL character"),
  )
  .superRefine((env, ctx) => {
    for (const name of Object.keys(env)) {
      if (LOADER_VARIABLE.test(name))
        ctx.addIssue({ code: "custom", path: [name], message: "changes how programs load or start, and is refused" });
    }
  });

/** Per-spec resource limits: each may only tighten the daemon's defaults and the parent's own. */
export const LimitsSchema = z.strictObject({
  pids: z.number().int().min(8).max(1_000_000).optional(),
  memoryMiB: z
    .number()
    .int()
    .min(32)
    .max(16 * 1024 * 1024)
    .optional(),
  cpus: z.number().min(0.01).max(1024).optional(),
  diskMiB: z
    .number()
    .int()
    .min(1)
    .max(1024 * 1024 * 1024)
    .optional(),
});
export type SpecLimits = z.infer<typeof LimitsSchema>;

export const AgentSpecSchema = z
  .strictObject({
    name: z.string().regex(NAME, "must be 1..64 characters of [A-Za-z0-9._-]"),
    model: z.strictObject({ provider: z.string().min(1), id: z.string().min(1) }).optional(),
    script: z.array(ScriptStepSchema).max(10_000).optional(),
    systemPrompt: z.string().max(200_000).optional(),
    tools: z.array(z.enum(TOOL_NAMES)).optional(),
    spawnDepth: z.number().int().min(0).max(64).optional(),
    maxAgents: z.number().int().min(0).max(100_000).optional(),
    /** Spend caps of this agent's whole subtree (tokens of every kind, and dollars at pi-ai's prices). */
    maxTokens: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    maxCostUsd: z.number().min(0).max(1e9).optional(),
    image: z.string().min(1).max(256).optional(),
    env: EnvSchema.optional(),
    network: z.boolean().optional(),
    limits: LimitsSchema.optional(),
    /** Tool calls that wait for an operator's decision; a child's policy is its parent's plus this. */
    approve: z.array(approveRuleSchema(TOOL_NAMES)).max(MAX_APPROVE_RULES).optional(),
    /** A request nobody answered within this many ms is denied (`by: "timeout"`); a child without one has its parent's. */
    approveTimeoutMs: z.number().int().min(1).max(MAX_TIMER_MS).optional(),
  })
  .refine((s) => (s.model === undefined) !== (s.script === undefined), {
    message: "exactly one of model or script is required",
    path: ["model"],
  });

export type AgentSpec = z.infer<typeof AgentSpecSchema>;
export type ScriptStep = z.infer<typeof ScriptStepSchema>;

/** A request's `budget`: overrides of the spec's (or the parent's remaining) spawnDepth, maxAgents and spend caps. */
export const BudgetSchema = z.strictObject({
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
  maxTokens: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe(
      "Most tokens (input, output and cache, summed over every model call) the agent and all its descendants may use. Can only tighten the spec's cap or what the parent has left.",
    ),
  maxCostUsd: z
    .number()
    .min(0)
    .max(1e9)
    .optional()
    .describe(
      "Most US dollars the model calls of the agent and all its descendants may cost. Can only tighten the spec's cap or what the parent has left.",
    ),
});

export const DEFAULT_SPAWN_DEPTH = 2;
export const DEFAULT_MAX_AGENTS = 16;
