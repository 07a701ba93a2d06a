import type { ChangesView, FileChange, ForkedFrom } from "../swarm-api.ts";
import { parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { columns, oneLine } from "./table-format.ts";

/**
 * `swarm changes <agentId> [--diff]`: GET /agents/:agentId/changes, what a fork child added,
 * modified or deleted in /work since its fork point, as a table (see `changeTable`). `--diff`
 * prints the unified diffs instead, as the service made them (`a/` the fork point, `b/` the
 * child; `patch -p1` takes them), and names on stderr each changed path they do not hold. `--json`
 * prints the service's answer. No changes is a note on stderr and exit 0; an agent not made by a
 * fork (409, `NOT_A_FORK`) is exit 1.
 */
export async function changesCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("changes", args, {
    ...COMMON_OPTIONS,
    diff: { type: "boolean", default: false },
  });
  const [agentId = ""] = positionals("changes", given, ["agentId"]);
  const changes = await ctx.client(values.url).changes(agentId, { signal: ctx.signal });
  if (values.json) printJson(ctx.io, changes);
  else if (changes.files.length === 0)
    ctx.io.err(`${changes.agentId} changed nothing in /work ${sinceFork(changes.forkedFrom)}\n`);
  else if (values.diff) {
    for (const file of changes.files) {
      if (file.diff !== undefined) ctx.io.out(file.diff.endsWith("\n") ? file.diff : `${file.diff}\n`);
      else ctx.io.err(`not in the diff: ${oneLine(file.path)} (${file.change} ${file.kind}${whyNoDiff(file)})\n`);
    }
  } else ctx.io.out(`${changeTable(changes).join("\n")}\n`);
  return EXIT.OK;
}

/**
 * A heading, then one line per changed path, by path: the change, what the entry is (was, when
 * deleted), its size now and at the fork point in bytes (`-` where it is absent), the lines its
 * diff adds and removes (`none` for a file without a diff, `-` for what is not a file) and the
 * path (a link's with its target). Under the table, why each file without a diff has none.
 */
export function changeTable(changes: ChangesView): string[] {
  const n = changes.files.length;
  const heading = `${changes.agentId} changed ${n} path${n === 1 ? "" : "s"} in /work ${sinceFork(changes.forkedFrom)}`;
  const size = (bytes: number | null) => (bytes === null ? "-" : String(bytes));
  const rows = changes.files.map((file) => [
    file.change,
    file.kind,
    size(file.size),
    size(file.baseSize),
    diffCell(file),
    `${oneLine(file.path)}${file.linkTarget !== undefined ? ` -> ${oneLine(file.linkTarget)}` : ""}`,
  ]);
  const table = columns([["CHANGE", "KIND", "SIZE", "BASE", "DIFF", "PATH"], ...rows]);
  const reasons = changes.files.flatMap((file) =>
    file.noDiff !== undefined ? [`no diff of ${oneLine(file.path)}: ${oneLine(file.noDiff)}`] : [],
  );
  return [heading, ...table, ...(reasons.length > 0 ? ["", ...reasons] : [])];
}

/** "since its fork from a_… at turn 2", or "…in turn 2, at its spawn_agent call toolu_…" for a fork from inside. */
function sinceFork({ agentId, forkPoint }: ForkedFrom): string {
  return forkPoint.toolCallId === undefined
    ? `since its fork from ${agentId} at turn ${forkPoint.turn}`
    : `since its fork from ${agentId} in turn ${forkPoint.turn}, at its spawn_agent call ${forkPoint.toolCallId}`;
}

/** `+3 -1`: the lines a file's diff adds and removes, counted in its hunks (a removed `-- x` is `--- x` there too). */
function diffCell(file: FileChange): string {
  if (file.diff === undefined) return file.noDiff !== undefined ? "none" : "-";
  let added = 0;
  let removed = 0;
  let inHunks = false;
  for (const line of file.diff.split("\n")) {
    if (line.startsWith("@@")) inHunks = true;
    else if (inHunks && line.startsWith("+")) added++;
    else if (inHunks && line.startsWith("-")) removed++;
  }
  return `+${added} -${removed}`;
}

function whyNoDiff(file: FileChange): string {
  if (file.noDiff !== undefined) return `: ${oneLine(file.noDiff)}`;
  return file.linkTarget !== undefined ? ` -> ${oneLine(file.linkTarget)}` : "";
}
