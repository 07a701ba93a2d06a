import type { PermissionState } from "../swarm-api.ts";
import { parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { permissionTable } from "./permission-table.ts";

const STATES: readonly string[] = ["pending", "resolved", "all"] satisfies (PermissionState | "all")[];

/**
 * `swarm approvals <runId> [--state pending|resolved|all]`: the run's approval requests (tool calls
 * an agent's `approve` policy holds for the operator), oldest first, as a table; answer one with
 * `swarm allow|deny <agentId> <requestId>`. `--json` prints the service's `{"permissions": [...]}`.
 * None to show is a note on stderr and exit 0, so a script can poll.
 */
export async function approvalsCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("approvals", args, {
    ...COMMON_OPTIONS,
    state: { type: "string" },
  });
  const [runId = ""] = positionals("approvals", given, ["runId"]);
  const state = values.state ?? "pending";
  if (!STATES.includes(state))
    throw usage("approvals", `--state must be "pending", "resolved" or "all", not ${JSON.stringify(state)}`);
  const answer = await ctx
    .client(values.url)
    .listPermissions(runId, state as PermissionState | "all", { signal: ctx.signal });
  if (values.json) printJson(ctx.io, answer);
  else if (answer.permissions.length === 0)
    ctx.io.err(`no ${state === "all" ? "" : `${state} `}approval requests in run ${runId}\n`);
  else ctx.io.out(`${permissionTable(answer.permissions, Date.now()).join("\n")}\n`);
  return EXIT.OK;
}
