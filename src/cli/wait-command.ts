import { DEFAULT_WAIT_MANY_MS, MAX_WAIT_AGENTS, MAX_WAIT_MANY_MS } from "../api/limits.ts";
import type { WaitResponse } from "../swarm-api.ts";
import { intOption, parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { clip, columns, oneLine } from "./table-format.ts";

/** How much of each result its line shows; `swarm result` and `--json` have it whole. */
const RESULT_WIDTH = 60;

/**
 * `swarm wait <runId> <agentId>... [--first] [--stop-others] [--timeout MS]`: POST
 * /runs/:runId/wait, one hold for several agents: until every one settled, or with `--first` until
 * one settles with outcome success (the winner), for at most MS (1..600000, the service's default
 * 240000). A table of their results (see `waitTable`); `--stop-others` then stops every listed
 * agent still live but the winner. Exit 0 when all settled (`--first`: a winner); 4 when the
 * timeout left some pending with no winner; 1 when `--first` found every agent settled and none
 * succeeded. `--json` prints the service's answer.
 */
export async function waitCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("wait", args, {
    ...COMMON_OPTIONS,
    first: { type: "boolean", default: false },
    "stop-others": { type: "boolean", default: false },
    timeout: { type: "string" },
  });
  const [runId = "", ...agentIds] = positionals("wait", given, ["runId", "agentId"], true);
  if (agentIds.length > MAX_WAIT_AGENTS)
    throw usage("wait", `at most ${MAX_WAIT_AGENTS} agents: ${agentIds.length} given`);
  const timeoutMs = intOption("wait", "timeout", values.timeout, 1, MAX_WAIT_MANY_MS, DEFAULT_WAIT_MANY_MS);
  const mode = values.first ? "first" : "all";
  const answer = await ctx
    .client(values.url)
    .waitFor(runId, { agentIds, mode, stopOthers: values["stop-others"], timeoutMs }, { signal: ctx.signal });
  const pending = answer.results.filter((r) => r.state === "pending").length;
  const stopped = values["stop-others"]
    ? [answer.winner === null ? "stopped every listed agent still live" : "stopped every other listed agent still live"]
    : [];
  if (values.json) printJson(ctx.io, answer);
  else ctx.io.out(`${[...waitTable(answer), ...stopped].join("\n")}\n`);

  if (answer.winner !== null || (mode === "all" && pending === 0)) return EXIT.OK;
  const of = `${agentIds.length} agent${agentIds.length === 1 ? "" : "s"}`;
  if (pending > 0) {
    if (!values.json)
      ctx.io.err(
        mode === "first"
          ? `swarm: no winner within ${timeoutMs} ms: ${pending} of ${of} still pending, none succeeded\n`
          : `swarm: ${pending} of ${of} still pending after ${timeoutMs} ms\n`,
      );
    return EXIT.PENDING;
  }
  if (!values.json) ctx.io.err(`swarm: no winner: every one of ${of} settled and none with outcome success\n`);
  return EXIT.SERVICE;
}

/**
 * `winner a_…` when there is one, then one line per result in the service's order: agent, state
 * (`settled` or `pending`), outcome and the result text on one clipped line (`-` for none).
 */
export function waitTable(answer: WaitResponse): string[] {
  const rows = answer.results.map((r) => [
    r.agentId,
    r.state,
    r.outcome ?? "-",
    r.result === null ? "-" : clip(oneLine(r.result), RESULT_WIDTH) || "-",
  ]);
  const table = columns([["AGENT", "STATE", "OUTCOME", "RESULT"], ...rows]);
  return answer.winner === null ? table : [`winner ${answer.winner}`, ...table];
}
