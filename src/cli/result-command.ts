import { MAX_WAIT_SECONDS } from "../swarm-api.ts";
import { intOption, parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm result <agentId> [--wait SECONDS]`: the result text on stdout once settled (exit 0);
 * still pending after the wait: exit 4. `--json` prints the Result resource either way.
 */
export async function resultCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("result", args, {
    ...COMMON_OPTIONS,
    wait: { type: "string" },
  });
  const [agentId = ""] = positionals("result", given, ["agentId"]);
  const wait = intOption("result", "wait", values.wait, 0, MAX_WAIT_SECONDS, 0);
  const result = await ctx.client(values.url).result(agentId, wait, { signal: ctx.signal });
  if (values.json) printJson(ctx.io, result);
  if (result.state === "pending") {
    if (!values.json)
      ctx.io.err(`swarm: the result of ${agentId} is still pending${wait > 0 ? ` after ${wait} s` : ""}\n`);
    return EXIT.PENDING;
  }
  if (!values.json) {
    if (result.result !== null) ctx.io.out(result.result.endsWith("\n") ? result.result : `${result.result}\n`);
    // The text alone goes to stdout, so scripts can capture it; anything but success is said on stderr.
    if (result.outcome !== "success")
      ctx.io.err(
        `swarm: ${agentId} settled with outcome ${result.outcome}${result.result === null ? " and no result text" : ""}\n`,
      );
  }
  return EXIT.OK;
}
