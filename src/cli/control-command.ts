import { parseArgs } from "node:util";
import { type ControlResponse, MAX_DRAIN_TIMEOUT_MS } from "../swarm-api.ts";
import { intOption, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

export type ControlVerb = "pause" | "resume" | "stop" | "steer";

/**
 * `swarm pause|resume|stop|steer <agentId> [--subtree]`: one line per affected agent
 * (`<agentId> applied|noop|failed [reason]`). Exit 1 when any member failed: the service
 * answered 202, but the operator's intent did not fully happen. `stop --mode drain` answers at
 * once: each member ends later, once its turn settles, or is aborted after `--drain-timeout` ms.
 */
export async function controlCommand(ctx: CliContext, verb: ControlVerb, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...COMMON_OPTIONS,
      subtree: { type: "boolean", default: false },
      mode: { type: "string" },
      message: { type: "string", short: "m" },
      "drain-timeout": { type: "string" },
    },
  });
  if (values.mode !== undefined && verb !== "stop") throw usage(verb, "--mode is only for stop");
  if (values.mode !== undefined && values.mode !== "abort" && values.mode !== "drain")
    throw usage(verb, '--mode must be "abort" or "drain"');
  if (values.message !== undefined && verb !== "steer") throw usage(verb, "--message is only for steer");
  // The service would refuse it too (400); a deadline on an abort is a misunderstanding worth naming here.
  if (values["drain-timeout"] !== undefined && values.mode !== "drain")
    throw usage(verb, "--drain-timeout is only for stop --mode drain");
  const drainTimeoutMs =
    values["drain-timeout"] === undefined
      ? undefined
      : intOption(verb, "drain-timeout", values["drain-timeout"], 1_000, MAX_DRAIN_TIMEOUT_MS, 0);
  const [agentId = "", ...words] = positionals(verb, given, ["agentId"], verb === "steer");
  const scope = values.subtree ? "subtree" : "agent";
  const client = ctx.client(values.url);
  const options = { signal: ctx.signal };

  let answer: ControlResponse & { delivery?: string };
  if (verb === "steer") {
    const message = values.message ?? words.join(" ");
    if (message.trim() === "") throw usage("steer", "missing <message>");
    answer = await client.steer(agentId, { message, scope }, options);
  } else if (verb === "stop") {
    answer = await client.stop(
      agentId,
      { mode: values.mode === "drain" ? "drain" : "abort", scope, drainTimeoutMs },
      options,
    );
  } else {
    answer = await (verb === "pause" ? client.pause : client.resume)(agentId, scope, options);
  }

  if (values.json) printJson(ctx.io, answer);
  else {
    if (answer.delivery) ctx.io.out(`delivery: ${answer.delivery}\n`);
    for (const r of answer.results) ctx.io.out(`${r.agentId} ${r.outcome}${r.error ? ` ${r.error}` : ""}\n`);
  }
  return answer.results.some((r) => r.outcome === "failed") ? EXIT.SERVICE : EXIT.OK;
}
