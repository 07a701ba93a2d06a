import { MAX_PERMISSION_MESSAGE_CHARS } from "../client/swarm-client.ts";
import type { PermissionAnswer, PermissionDecision } from "../swarm-api.ts";
import { parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { argsSummary } from "./permission-table.ts";

/**
 * `swarm allow|deny <agentId> <requestId> [--message TEXT]`: answer a pending approval request
 * (see `swarm approvals`). An allowed call runs; a denied one fails, and the agent's model is told
 * `--message` (deny only) as the tool's error. Prints the request as resolved. An unknown request
 * (404) or one already resolved (409: by someone else, a stop or its timeout) is exit 1.
 */
export async function decisionCommand(
  ctx: CliContext,
  decision: PermissionDecision,
  args: string[],
): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs(decision, args, {
    ...COMMON_OPTIONS,
    message: { type: "string", short: "m" },
  });
  const [agentId = "", requestId = ""] = positionals(decision, given, ["agentId", "requestId"]);
  const answer: PermissionAnswer = { decision };
  if (values.message !== undefined) {
    if (decision !== "deny") throw usage(decision, "--message is only for deny");
    if (values.message.length < 1 || values.message.length > MAX_PERMISSION_MESSAGE_CHARS)
      throw usage(decision, `--message must be 1..${MAX_PERMISSION_MESSAGE_CHARS} characters`);
    answer.message = values.message;
  }
  const resolved = await ctx.client(values.url).resolvePermission(agentId, requestId, answer, { signal: ctx.signal });
  if (values.json) printJson(ctx.io, resolved);
  else {
    const verdict = resolved.decision === "deny" ? "denied" : "allowed";
    ctx.io.out(
      `${resolved.requestId} ${verdict}: ${resolved.agentId} ${resolved.tool} ${argsSummary(resolved.args)}${resolved.message ? ` (${resolved.message})` : ""}\n`,
    );
  }
  return EXIT.OK;
}
