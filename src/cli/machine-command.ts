import { parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { machineLines } from "./machine-render.ts";

/**
 * `swarm machine <agentId>`: the agent's state machine as the daemon runs it (an offline stand-in
 * for the Stately inspector): state value, tags and its latest transitions; see `machineLines`.
 * `--json` prints the service's answer. An unknown agent (404) is exit 1.
 */
export async function machineCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("machine", args, COMMON_OPTIONS);
  const [agentId = ""] = positionals("machine", given, ["agentId"]);
  const machine = await ctx.client(values.url).getMachine(agentId, { signal: ctx.signal });
  if (values.json) printJson(ctx.io, machine);
  else ctx.io.out(`${machineLines(machine).join("\n")}\n`);
  return EXIT.OK;
}
