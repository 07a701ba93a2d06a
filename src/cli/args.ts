import { readFileSync } from "node:fs";
import { UsageError } from "./exit-codes.ts";
import { COMMAND_USAGE } from "./usage.ts";

/** The positionals a command expects, or a usage error naming what is missing or extra. */
export function positionals(command: string, given: string[], names: string[], rest = false): string[] {
  if (given.length < names.length) throw usage(command, `missing <${names[given.length]}>`);
  if (!rest && given.length > names.length) throw usage(command, `unexpected argument ${JSON.stringify(given[names.length])}`);
  return given;
}

/** An integer option in `min..max`, or `fallback` when absent. */
export function intOption(command: string, flag: string, value: string | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw usage(command, `--${flag} must be an integer ${min}..${max}, not ${JSON.stringify(value)}`);
  return Number(value);
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
