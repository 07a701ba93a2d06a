import { readFileSync } from "node:fs";
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { closest } from "../closest.ts";
import type { SpendCaps } from "../swarm-api.ts";
import { UsageError } from "./exit-codes.ts";
import { COMMAND_USAGE } from "./usage.ts";

/**
 * A command's flags and positionals (node's `parseArgs`, strict). An unknown flag, a flag without
 * its value or a switch given one is a usage error in the CLI's words, naming the closest flag the
 * command has (`unknown option --max-tokenz; did you mean --max-tokens?`), not node's own text.
 */
export function parseCommandArgs<const O extends ParseArgsOptionsConfig>(command: string, args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw optionError(command, err, options);
  }
}

function optionError(command: string, err: unknown, options: ParseArgsOptionsConfig): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  const text = err instanceof Error ? err.message : String(err);
  const flags = Object.keys(options).map((name) => `--${name}`);
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const given = /'([^']+)'/.exec(text)?.[1] ?? text;
    const near = closest(given.replace(/^-+/, "").split("=")[0] ?? "", Object.keys(options), 1);
    const hint = near.length > 0 ? `did you mean --${near[0]}?` : `swarm ${command} takes ${flags.join(", ")}`;
    return usage(command, `unknown option ${given}; ${hint}`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    // "Option '-m, --message <value>' argument missing": the long name when there is one.
    const quoted = /'([^']+)'/.exec(text)?.[1] ?? "";
    const flag = /--[\w-]+/.exec(quoted)?.[0] ?? /-\w/.exec(quoted)?.[0] ?? "an option";
    const name = flag.replace(/^-+/, "");
    const takesValue = Object.entries(options).some(
      ([long, option]) => (long === name || option.short === name) && option.type === "string",
    );
    return usage(command, takesValue ? `${flag} needs a value` : `${flag} takes no value`);
  }
  return err;
}

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
