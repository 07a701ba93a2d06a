import { isServiceError } from "../client/client-errors.ts";
import type { AdoptResponse } from "../swarm-api.ts";
import { parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { columns, oneLine } from "./table-format.ts";

/**
 * `swarm adopt <agentId> --from <childId> [--theirs]`: POST /agents/:agentId/adopt, what a fork
 * child changed in /work since its fork point applied onto its parent's /work, between turns. One
 * line per path applied, then one per path skipped with why. A path both changed since the fork
 * (409, `ADOPT_CONFLICT`) applies nothing and is exit 1, naming `--theirs` (the child's version
 * wins); so is a parent in a turn (409) or a `--from` that is not its fork child (400).
 */
export async function adoptCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("adopt", args, {
    ...COMMON_OPTIONS,
    from: { type: "string" },
    theirs: { type: "boolean", default: false },
  });
  const [agentId = ""] = positionals("adopt", given, ["agentId"]);
  const from = values.from;
  if (from === undefined || from === "") throw usage("adopt", "missing --from <childId>: the fork child to adopt from");
  const onConflict = values.theirs ? "theirs" : "fail";
  let adopted: AdoptResponse;
  try {
    adopted = await ctx.client(values.url).adopt(agentId, { from, onConflict }, { signal: ctx.signal });
  } catch (err) {
    if (!isServiceError(err) || err.status !== 409 || values.theirs || !/changed both by/.test(err.message)) throw err;
    ctx.io.err(
      `swarm: service error 409: ${err.message}\nswarm: to take ${from}'s version of those paths: swarm adopt ${agentId} --from ${from} --theirs\n`,
    );
    return EXIT.SERVICE;
  }
  if (values.json) printJson(ctx.io, adopted);
  else ctx.io.out(`${adoptLines(adopted).join("\n")}\n`);
  return EXIT.OK;
}

/** What an adopt did: a heading, one line per path applied (`added  src/x.ts`), one per path skipped with why. */
export function adoptLines(adopted: AdoptResponse): string[] {
  const { agentId, from, files, skipped } = adopted;
  const n = files.length;
  const heading =
    n > 0
      ? `${agentId} adopted ${n} change${n === 1 ? "" : "s"} of ${from}`
      : skipped.length > 0
        ? `${agentId} adopted nothing of ${from}`
        : `${agentId} adopted nothing of ${from}: its /work already holds every change ${from} made since the fork`;
  const rows = [
    ...files.map((f) => [f.change, oneLine(f.path)]),
    ...skipped.map((s) => ["skipped", `${oneLine(s.path)}: ${oneLine(s.reason)}`]),
  ];
  return [heading, ...columns(rows)];
}
