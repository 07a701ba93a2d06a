import { DEFAULT_RUN_LIST_LIMIT, MAX_RUN_LIST_LIMIT } from "../swarm-api.ts";
import { intOption, parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { runTable } from "./run-table.ts";

/**
 * `swarm runs [--limit N]`: every run the service knows, newest first (at most N, 1..1000, default
 * 100), as a table; see `runTable`. `--json` prints the service's `{"runs": [...]}`. No runs is a
 * note on stderr and exit 0.
 */
export async function runsCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("runs", args, {
    ...COMMON_OPTIONS,
    limit: { type: "string" },
  });
  positionals("runs", given, []);
  const limit = intOption("runs", "limit", values.limit, 1, MAX_RUN_LIST_LIMIT, DEFAULT_RUN_LIST_LIMIT);
  const answer = await ctx.client(values.url).listRuns(limit, { signal: ctx.signal });
  if (values.json) printJson(ctx.io, answer);
  else if (answer.runs.length === 0) ctx.io.err("no runs\n");
  else ctx.io.out(`${runTable(answer.runs, Date.now()).join("\n")}\n`);
  return EXIT.OK;
}
