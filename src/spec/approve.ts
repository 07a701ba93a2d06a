import { runInNewContext } from "node:vm";
import { z } from "zod";

/** Tools whose approvals the daemon enforces itself (the host calls it answers); the harness gates the rest. */
export const DAEMON_GATED_TOOLS: ReadonlySet<string> = new Set(["spawn_agent", "await_result"]);

/** Longest `match` pattern: it is compiled and run by the daemon, so it is kept short. */
export const MAX_MATCH_LENGTH = 1_000;
/** Most rules in one spec's `approve` (a child's policy is its parent's plus its own). */
export const MAX_APPROVE_RULES = 64;
/** How long one pattern may run on one call's arguments before the call is taken to match (fail closed). */
const MATCH_TIMEOUT_MS = 50;
/** Arguments longer than this (as JSON) are taken to match every pattern: asking is the safe answer. */
const MAX_MATCHED_BYTES = 256 * 1024;

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
    match: z.string().min(1).max(MAX_MATCH_LENGTH).refine(isRegExp, "must be a valid JavaScript regular expression").optional(),
  });
  // A string is checked as `"*"` and anything else as a tool rule, so the error names what is wrong
  // with the rule given (a union would report only that no member matched).
  return z.unknown().transform((value, ctx): ApproveRule => {
    const parsed = typeof value === "string" ? star.safeParse(value) : toolRule.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: [...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  });
}

export type ApproveRule = "*" | { tool: string; match?: string };

/**
 * Whether a call needs the operator's decision under `rules`. A pattern runs in a separate V8
 * context with a time limit, so a pattern that backtracks badly on what an agent sends cannot hang
 * whoever tests it; one that runs out of time, or arguments too large to test, count as a match.
 */
export function needsApproval(rules: readonly ApproveRule[], tool: string, args: unknown): boolean {
  let json: string | undefined;
  for (const rule of rules) {
    if (rule === "*") return true;
    if (rule.tool !== tool) continue;
    if (rule.match === undefined) return true;
    json ??= safeJson(args);
    if (json === undefined || json.length > MAX_MATCHED_BYTES) return true;
    if (matches(rule.match, json)) return true;
  }
  return false;
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value ?? {});
  } catch {
    return undefined;
  }
}

function matches(pattern: string, text: string): boolean {
  try {
    return runInNewContext("new RegExp(pattern).test(text)", { pattern, text }, { timeout: MATCH_TIMEOUT_MS }) === true;
  } catch {
    return true;
  }
}

/**
 * A child's policy: its parent's rules and its own, each once. `"*"` alone covers everything.
 * Returns the problem when the whole would exceed `MAX_APPROVE_RULES`.
 */
export function combinePolicies(parent: readonly ApproveRule[], own: readonly ApproveRule[]): { rules: ApproveRule[] } | { problem: string } {
  const seen = new Map<string, ApproveRule>();
  for (const rule of [...parent, ...own]) seen.set(JSON.stringify(rule), rule);
  const rules = [...seen.values()];
  if (rules.includes("*")) return { rules: ["*"] };
  if (rules.length > MAX_APPROVE_RULES) {
    return { problem: `with its parent's ${parent.length} rules the policy would have ${rules.length}, more than ${MAX_APPROVE_RULES}` };
  }
  return { rules };
}
