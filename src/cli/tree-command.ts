import { watchRun } from "../client/run-watch.ts";
import { parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { renderTree, trackActivity, treeJson } from "./tree-render.ts";

/** Redraws at most this often: a busy run sends many events, a terminal needs few frames. */
const FRAME_MS = 100;

/**
 * `swarm tree <runId> [--once]`: the spawn tree from `GET /runs/:runId`, kept current from the
 * events after its `asOf` until every agent has ended. On a terminal it is redrawn in place;
 * otherwise (a pipe, a log, `--json`) only the final tree is printed, once the run is over.
 */
export async function treeCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("tree", args, {
    ...COMMON_OPTIONS,
    once: { type: "boolean", default: false },
  });
  const [runId = ""] = positionals("tree", given, ["runId"]);
  const watch = await watchRun(ctx.client(values.url), runId, {
    afterSeq: "snapshot",
    stopWhen: "run-over",
    signal: ctx.signal,
  });
  const activity = new Map<string, string>();
  const live = ctx.io.isTTY && !values.json && !values.once;
  let drawn = 0;
  let last = 0;
  const draw = () => {
    const lines = renderTree(watch.tracker, activity);
    // Back to the first line of the previous frame, clear below, write the new frame.
    ctx.io.out(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ""}${lines.join("\n")}\n`);
    drawn = lines.length;
    last = Date.now();
  };

  // Events arriving faster than frames are drawn together by one trailing frame.
  let pending: NodeJS.Timeout | undefined;
  const redraw = () => {
    pending ??= setTimeout(
      () => {
        pending = undefined;
        draw();
      },
      Math.max(0, FRAME_MS - (Date.now() - last)),
    );
  };

  if (!values.once) {
    if (live) draw();
    // `events()` folds each event into `watch.tracker` before handing it over.
    for await (const event of watch.events()) {
      const changed = trackActivity(activity, event) || event.seq !== null;
      if (live && changed) redraw();
    }
    clearTimeout(pending);
    if (ctx.signal.aborted) return EXIT.INTERRUPTED;
  }
  if (values.json) printJson(ctx.io, treeJson(watch.tracker));
  else if (live) draw();
  else ctx.io.out(`${renderTree(watch.tracker, activity).join("\n")}\n`);
  return EXIT.OK;
}
