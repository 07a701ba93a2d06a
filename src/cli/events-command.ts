import type { SwarmEvent } from "../client/event-stream.ts";
import { watchRun } from "../client/run-watch.ts";
import { intOption, parseCommandArgs, positionals } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm events <runId> [--after SEQ] [--follow] [--ephemeral]`: the run's persisted events after
 * SEQ that exist now; with `--follow`, then new ones live until every agent has ended (or Ctrl-C).
 * `--ephemeral` adds the live-only events (text deltas, tool updates), which carry no seq.
 * `--json` prints one JSON object per line: `{seq, type, agentId, at, data}`.
 */
export async function eventsCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("events", args, {
    ...COMMON_OPTIONS,
    after: { type: "string" },
    follow: { type: "boolean", short: "f", default: false },
    ephemeral: { type: "boolean", default: false },
  });
  const [runId = ""] = positionals("events", given, ["runId"]);
  const afterSeq = intOption("events", "after", values.after, 0, Number.MAX_SAFE_INTEGER, 0);
  const watch = await watchRun(ctx.client(values.url), runId, {
    afterSeq,
    stopWhen: values.follow ? "run-over" : "caught-up",
    signal: ctx.signal,
  });
  for await (const event of watch.events()) {
    if (event.seq === null && !values.ephemeral) continue;
    if (values.json) printJson(ctx.io, event);
    else ctx.io.out(`${formatEvent(event)}\n`);
  }
  return ctx.signal.aborted ? EXIT.INTERRUPTED : EXIT.OK;
}

/** `    12  agent_spawned         a_1f…  {"specName":"worker",...}`: seq, type, agent, fields. */
function formatEvent(event: SwarmEvent): string {
  const seq = event.seq === null ? "-" : String(event.seq);
  return `${seq.padStart(6)}  ${event.type.padEnd(20)} ${(event.agentId ?? "-").padEnd(18)} ${JSON.stringify(event.data)}`;
}
