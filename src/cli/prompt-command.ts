import { parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { refused } from "./control-command.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm prompt <agentId> <text...>`: POST /agents/:agentId/prompt, a new turn on a live agent
 * (after the turn under way when busy, on resume when paused, once running when not yet running).
 * A refusal is said in words (`already ended`, `is draining`), exit 1.
 */
export async function promptCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("prompt", args, COMMON_OPTIONS);
  const [agentId = "", ...words] = positionals("prompt", given, ["agentId"], true);
  const text = words.join(" ");
  if (text.trim() === "") throw usage("prompt", "missing <text>");
  const client = ctx.client(values.url);
  const answer = await refused(ctx, client, "prompt", agentId, () =>
    client.prompt(agentId, text, { signal: ctx.signal }),
  );
  if (typeof answer === "number") return answer;
  if (values.json) printJson(ctx.io, { agentId, accepted: true });
  else ctx.io.out(`${agentId} prompted: the turn runs after any turn under way (on resume when paused)\n`);
  return EXIT.OK;
}
