import { isServiceError } from "../client/client-errors.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import { type ControlResponse, type Delivery, MAX_DRAIN_TIMEOUT_MS } from "../swarm-api.ts";
import { intOption, parseCommandArgs, positionals, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { type ControlKind, type ControlVerb, controlLines, refusalWords } from "./control-words.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

export type { ControlVerb };

/**
 * `swarm pause|resume|stop|steer <agentId> [--subtree]`: what happened in words, one line per
 * affected agent (`a_… paused`, `a_… already paused`, `a_… not paused: <reason>`) and, for several,
 * a count (`stopped 5 agents`); `--json` prints the service's answer. Exit 0 when every member is
 * as asked (done, or already so: a resume of a live agent that is not paused says `not paused:
 * nothing to resume`); 1 when the service refused (the agent ended, is draining, does not exist) or
 * a member failed. docs/controls.md has the table. `stop --mode drain` answers at once: each member
 * ends later, once its turns settle, or is aborted after `--drain-timeout` ms.
 */
export async function controlCommand(ctx: CliContext, verb: ControlVerb, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs(verb, args, {
    ...COMMON_OPTIONS,
    subtree: { type: "boolean", default: false },
    mode: { type: "string" },
    message: { type: "string", short: "m" },
    "drain-timeout": { type: "string" },
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
  const kind: ControlKind = verb === "stop" ? (values.mode === "drain" ? "drain" : "abort") : verb;

  const send = (): Promise<ControlResponse & { delivery?: Delivery }> => {
    if (verb === "steer") {
      const message = values.message ?? words.join(" ");
      if (message.trim() === "") throw usage("steer", "missing <message>");
      return client.steer(agentId, { message, scope }, options);
    }
    if (verb === "stop")
      return client.stop(agentId, { mode: kind === "drain" ? "drain" : "abort", scope, drainTimeoutMs }, options);
    return (verb === "pause" ? client.pause : client.resume)(agentId, scope, options);
  };
  const answer = await refused(ctx, client, verb, agentId, send);
  if (typeof answer === "number") return answer;

  if (values.json) printJson(ctx.io, answer);
  else ctx.io.out(`${controlLines(kind, answer).join("\n")}\n`);
  return answer.results.some((r) => r.outcome === "failed") ? EXIT.SERVICE : EXIT.OK;
}

/**
 * Runs `send`; a 409 is said in words from the agent's view and machine (`refusalWords`) on stderr, and answered
 * with its exit code: 0 for a resume with nothing to resume, else 1. Other errors are thrown on.
 */
export async function refused<T>(
  ctx: CliContext,
  client: SwarmClient,
  action: string,
  agentId: string,
  send: () => Promise<T>,
): Promise<T | ExitCode> {
  try {
    return await send();
  } catch (err) {
    if (!isServiceError(err) || err.status !== 409) throw err;
    const options = { signal: ctx.signal };
    const [agent, machine] = await Promise.all([
      client.getAgent(agentId, options).catch(() => undefined),
      client.getMachine(agentId, options).catch(() => undefined),
    ]);
    const said = agent ? refusalWords(action, agent, machine?.tags ?? []) : null;
    if (said === null) throw err;
    ctx.io.err(`swarm: ${said.text}\n`);
    return said.nothing ? EXIT.OK : EXIT.SERVICE;
  }
}
