import { parseCommandArgs, positionals, spendCapOptions } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson, SPEND_OPTIONS } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { budgetLines, spentLine } from "./spend-format.ts";

/**
 * `swarm budget <agentId> [--max-tokens N] [--max-cost-usd X]`: with a cap, POST
 * /agents/:agentId/budget (new absolute caps for the agent's subtree; a 409 when one would leave it
 * more than its parent has left is exit 1) and print the resulting budget. Without one, print the
 * agent's budget and what its subtree has spent. Raising a cap resumes nothing.
 */
export async function budgetCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("budget", args, { ...COMMON_OPTIONS, ...SPEND_OPTIONS });
  const [agentId = ""] = positionals("budget", given, ["agentId"]);
  const caps = spendCapOptions("budget", values);
  const client = ctx.client(values.url);
  const options = { signal: ctx.signal };

  if (caps.maxTokens === undefined && caps.maxCostUsd === undefined) {
    const agent = await client.getAgent(agentId, options);
    if (values.json)
      printJson(ctx.io, {
        agentId: agent.agentId,
        budget: agent.budget,
        usage: agent.usage,
        subtreeUsage: agent.subtreeUsage,
      });
    else ctx.io.out(`${[...budgetLines(agent.agentId, agent.budget), spentLine(agent.subtreeUsage)].join("\n")}\n`);
    return EXIT.OK;
  }
  const answer = await client.setBudget(agentId, caps, options);
  if (values.json) printJson(ctx.io, answer);
  else ctx.io.out(`${budgetLines(answer.agentId, answer.budget).join("\n")}\n`);
  return EXIT.OK;
}
