import { readFileSync } from "node:fs";
import type { SpendCaps } from "../swarm-api.ts";
import { UsageError } from "./exit-codes.ts";
import { COMMAND_USAGE } from "./usage.ts";

/** The positionals a command expects, or a usage error naming what is missing or extra. */
export function positionals(command: string, given: string[], names: string[], rest = false): string[] {
  if (given.length < names.length) throw usage(command, `missing <${names[given.length]}>`);
  if (!rest && given.length > names.length)
    throw usage(command, `unexpected argument ${JSON.stringify(given[names.length])}`);
  return given;
}

/** An integer option in `min..max`, or `fallback` when absent. */
export function intOption(
  command: string,
  flag: string,
  value: string | undefined,
  min: number,
  max: number,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw usage(command, `--${flag} must be an integer ${min}..${max}, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** The service's largest `maxCostUsd`; larger asks are a usage error here rather than its 400. */
const MAX_COST_USD = 1e9;

/** `--max-tokens N` and `--max-cost-usd X` as spend caps, only those given; anything but a non-negative number is a usage error. */
export function spendCapOptions(
  command: string,
  values: { "max-tokens"?: string; "max-cost-usd"?: string },
): SpendCaps {
  const tokens = values["max-tokens"];
  const cost = values["max-cost-usd"];
  const caps: SpendCaps = {};
  if (tokens !== undefined) {
    if (!/^\d+$/.test(tokens) || !Number.isSafeInteger(Number(tokens)))
      throw usage(command, `--max-tokens must be a whole number of tokens, not ${JSON.stringify(tokens)}`);
    caps.maxTokens = Number(tokens);
  }
  if (cost !== undefined) {
    if (!/^(\d+\.?\d*|\.\d+)$/.test(cost) || Number(cost) > MAX_COST_USD)
      throw usage(
        command,
        `--max-cost-usd must be a number of dollars up to ${MAX_COST_USD}, not ${JSON.stringify(cost)}`,
      );
    caps.maxCostUsd = Number(cost);
  }
  return caps;
}

export function usage(command: string, problem: string): UsageError {
  return new UsageError(`${problem}\nusage: ${COMMAND_USAGE[command] ?? "swarm --help"}`);
}

/** The JSON in a file named on the command line, or on stdin for `-`; unreadable or invalid is a usage error. */
export function readJsonArg(command: string, source: string): unknown {
  let text: string;
  try {
    text = readFileSync(source === "-" ? 0 : source, "utf8");
  } catch (err) {
    throw usage(command, `cannot read ${source}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw usage(command, `${source} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
