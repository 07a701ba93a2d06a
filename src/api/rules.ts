import type { z } from "zod";

/**
 * A rule across the fields of a body, which no field's own schema can state (`drainTimeoutMs` only
 * with mode `drain`). Declared once: the route's schema checks it, and the bridge tool made from the
 * route checks it too, in its own words.
 */
export interface Rule<T> {
  holds(value: T): boolean;
  /** The field the rule is about, if one. */
  path?: string;
  /** What the route answers, after `body.<path>: `. */
  message: string;
  /** What a tool answers: a sentence on its own, as the model reads no `body.` prefix. Default `<path> <message>.` */
  toolMessage?: string;
}

const RULES = new WeakMap<z.ZodType, readonly Rule<never>[]>();

/** `schema` with the rules checked (zod refinements), remembered so that tools made from it check them as well. */
export function withRules<S extends z.ZodObject>(schema: S, ...rules: Rule<z.output<S>>[]): S {
  let checked = schema;
  for (const rule of rules)
    checked = checked.refine((value) => rule.holds(value), {
      message: rule.message,
      ...(rule.path === undefined ? {} : { path: [rule.path] }),
    });
  RULES.set(checked, rules);
  return checked;
}

/** The rules `withRules` put on this object schema (none for any other). */
export function rulesOf(schema: z.ZodType): readonly Rule<never>[] {
  return RULES.get(schema) ?? [];
}

/** The words a tool answers when `rule` does not hold. */
export const toolMessageOf = (rule: Rule<never>): string =>
  rule.toolMessage ?? (rule.path === undefined ? `${rule.message}.` : `${rule.path} ${rule.message}.`);
