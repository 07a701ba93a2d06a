import { type Context, createContext, runInContext, Script } from "node:vm";
import { z } from "zod";

/** Tools whose approvals the daemon enforces itself (the host calls it answers); the harness gates the rest. */
export const DAEMON_GATED_TOOLS: ReadonlySet<string> = new Set(["spawn_agent", "await_result"]);

/** Longest `match` pattern: it is compiled and run by the daemon, so it is kept short. */
export const MAX_MATCH_LENGTH = 1_000;
/** Most rules in one spec's `approve` (a child's policy is its parent's plus its own). */
export const MAX_APPROVE_RULES = 64;
/** How long a call's patterns may run on its arguments, all together, before the call is taken to match (fail closed). */
const MATCH_TIMEOUT_MS = 50;
/** Arguments longer than this many characters (as JSON) are taken to match every pattern: asking is the safe answer. */
const MAX_MATCHED_CHARS = 256 * 1024;

const isRegExp = (pattern: string): boolean => {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
};

/**
 * One rule of a spec's `approve`: `"*"` (every tool call), or a tool name, optionally with `match`,
 * a JavaScript regular expression tested against the call's arguments as JSON.
 */
export function approveRuleSchema<T extends readonly [string, ...string[]]>(toolNames: T) {
  const star = z.literal("*", { error: 'must be "*" or an object {tool, match?}' });
  const toolRule = z.strictObject({
    tool: z.enum(toolNames, { error: `must be one of ${toolNames.join(", ")}` }),
    match: z
      .string()
      .min(1)
      .max(MAX_MATCH_LENGTH)
      .refine(isRegExp, "must be a valid JavaScript regular expression")
      .optional(),
  });
  // A string is checked as `"*"` and anything else as a tool rule, so the error names what is wrong
  // with the rule given (a union would report only that no member matched).
  return z.unknown().transform((value, ctx): ApproveRule => {
    const parsed = typeof value === "string" ? star.safeParse(value) : toolRule.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues)
      ctx.addIssue({ ...issue, path: [...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  });
}

export type ApproveRule = "*" | { tool: string; match?: string };

/**
 * Whether a call needs the operator's decision under `rules`. The patterns of the call's tool run
 * in a V8 context of their own, compiled once per policy, with one time limit for the whole call,
 * so a pattern that backtracks badly on what an agent sends cannot hang whoever tests it. Running
 * out of time, or arguments too large to test, count as a match: asking is the safe answer.
 */
export function needsApproval(rules: readonly ApproveRule[], tool: string, args: unknown): boolean {
  const patterns: number[] = [];
  for (const [index, rule] of rules.entries()) {
    if (rule === "*") return true;
    if (rule.tool !== tool) continue;
    if (rule.match === undefined) return true;
    patterns.push(index);
  }
  if (patterns.length === 0) return false;
  const json = safeJson(args);
  if (json === undefined || json.length > MAX_MATCHED_CHARS) return true;
  try {
    return matchesAny(compiled(rules), patterns, json);
  } catch {
    return true;
  }
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value ?? {});
  } catch {
    return undefined;
  }
}

/** A policy's patterns, compiled in their own context (rules without `match` hold `null`). */
interface CompiledPolicy {
  context: Context;
}

const POLICIES = new WeakMap<readonly ApproveRule[], CompiledPolicy>();
/** Made at its first use, not when the module loads: a V8 startup snapshot (bench/harness-start.ts) cannot hold a vm.Script. */
let test: Script | undefined;

function compiled(rules: readonly ApproveRule[]): CompiledPolicy {
  let policy = POLICIES.get(rules);
  if (!policy) {
    const sources = rules.map((rule) => (rule === "*" || rule.match === undefined ? null : rule.match));
    const context = createContext({ sources });
    // Compiled inside the context: the RegExp objects, and any time they take, are the context's.
    runInContext(
      "globalThis.patterns = sources.map((source) => (source === null ? null : new RegExp(source)))",
      context,
      { timeout: MATCH_TIMEOUT_MS },
    );
    policy = { context };
    POLICIES.set(rules, policy);
  }
  return policy;
}

/** Throws when the patterns ran out of time. */
function matchesAny(policy: CompiledPolicy, indexes: number[], text: string): boolean {
  policy.context.indexes = indexes;
  policy.context.text = text;
  try {
    test ??= new Script("indexes.some((i) => patterns[i].test(text))");
    return test.runInContext(policy.context, { timeout: MATCH_TIMEOUT_MS }) === true;
  } finally {
    policy.context.text = "";
  }
}

/**
 * A child's policy: its parent's rules and its own, each once. `"*"` alone covers everything.
 * Returns the problem when the whole would exceed `MAX_APPROVE_RULES`.
 */
export function combinePolicies(
  parent: readonly ApproveRule[],
  own: readonly ApproveRule[],
): { rules: ApproveRule[] } | { problem: string } {
  const seen = new Map<string, ApproveRule>();
  for (const rule of [...parent, ...own]) seen.set(JSON.stringify(rule), rule);
  const rules = [...seen.values()];
  if (rules.includes("*")) return { rules: ["*"] };
  if (rules.length > MAX_APPROVE_RULES) {
    return {
      problem: `with its parent's ${parent.length} rules the policy would have ${rules.length}, more than ${MAX_APPROVE_RULES}`,
    };
  }
  return { rules };
}
