import type { z } from "zod";
import { type ErrorCode, SwarmError } from "./errors.ts";

type Issue = z.core.$ZodIssue;
type PathKey = PropertyKey;

/** Parse `value` or throw a `SwarmError` whose message names every failing field under `root`. */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  root: string,
  code: ErrorCode = "INVALID_BODY",
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new SwarmError(code, formatIssues(root, parsed.error.issues), { details: parsed.error.issues });
}

/**
 * One line per failing field, `root.path: problem`, joined with "; ". Unknown keys are named one by
 * one; a union that matched no branch reports the branch that came closest (fewest issues), since
 * zod's own "Invalid input" names no field.
 */
export function formatIssues(root: string, issues: readonly Issue[]): string {
  return issues.flatMap((issue) => describe(root, [], issue)).join("; ");
}

function describe(root: string, prefix: readonly PathKey[], issue: Issue): string[] {
  const path = [...prefix, ...issue.path];
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => `${render(root, [...path, key])}: unknown field`);
    case "invalid_union": {
      const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0];
      if (closest === undefined || closest.length === 0) return [`${render(root, path)}: ${issue.message}`];
      return closest.flatMap((inner) => describe(root, path, inner));
    }
    case "invalid_type":
      if (/received undefined$/.test(issue.message)) return [`${render(root, path)}: is required`];
      return [`${render(root, path)}: expected ${issue.expected === "int" ? "integer" : issue.expected}`];
    default:
      return [`${render(root, path)}: ${issue.message}`];
  }
}

function render(root: string, path: readonly PathKey[]): string {
  return path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`),
    root,
  );
}
