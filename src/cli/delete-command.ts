import { isLive } from "../swarm-api.ts";
import { parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm delete <runId> [--purge]`: DELETE /runs/:runId. Every live agent of the run is aborted,
 * leaves first (`stopped 5 agents`); a run whose agents had all ended says so (`already ended:
 * nothing to stop`). With `--purge` the run is then removed for good: its events, results and
 * sandbox folders; a later command naming it is a 404 (exit 1).
 */
export async function deleteCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("delete", args, {
    ...COMMON_OPTIONS,
    purge: { type: "boolean", default: false },
  });
  const [runId = ""] = positionals("delete", given, ["runId"]);
  const client = ctx.client(values.url);
  const options = { signal: ctx.signal };
  // The agents the delete will stop: those live just before it (a spawn in between is stopped too, uncounted).
  const live = (await client.getRun(runId, options)).agents.filter((a) => isLive(a.state)).length;
  await client.deleteRun(runId, { ...options, purge: values.purge });
  if (values.json) printJson(ctx.io, { runId, stopped: live, purged: values.purge });
  else {
    const stopped = live === 0 ? "already ended: nothing to stop" : `stopped ${live} agent${live === 1 ? "" : "s"}`;
    ctx.io.out(
      `run ${runId} ${stopped}${values.purge ? "; purged: its events, results and sandbox folders are gone" : ""}\n`,
    );
  }
  return EXIT.OK;
}
