import { existsSync } from "node:fs";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { intOption, parseCommandArgs, positionals, readJsonArg, spendCapOptions, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson, SPEND_OPTIONS } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm run <spec.json | saved-spec | -> [--prompt TEXT]`: POST /runs, the budget options
 * (`--spawn-depth`, `--max-agents`, `--max-tokens`, `--max-cost-usd`) as its `budget`. The spec is
 * sent as read; the service validates it (a 400 names the failing fields, exit 1).
 */
export async function runCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("run", args, {
    ...COMMON_OPTIONS,
    ...SPEND_OPTIONS,
    prompt: { type: "string" },
    "keep-alive": { type: "boolean", default: false },
    "spawn-depth": { type: "string" },
    "max-agents": { type: "string" },
  });
  const [source = ""] = positionals("run", given, ["spec.json"]);
  const spec = await readSpec(ctx, "run", source);
  const spawnDepth = intOption("run", "spawn-depth", values["spawn-depth"], 0, 64, -1);
  const maxAgents = intOption("run", "max-agents", values["max-agents"], 0, 100_000, -1);
  const budget = {
    ...(spawnDepth >= 0 ? { spawnDepth } : {}),
    ...(maxAgents >= 0 ? { maxAgents } : {}),
    ...spendCapOptions("run", values),
  };
  const created = await ctx.client(values.url).createRun(
    {
      spec,
      ...(values.prompt !== undefined ? { prompt: values.prompt } : {}),
      ...(Object.keys(budget).length > 0 ? { budget } : {}),
      ...(values["keep-alive"] ? { keepAlive: true } : {}),
    },
    { signal: ctx.signal },
  );
  if (values.json) printJson(ctx.io, created);
  else
    ctx.io.out(
      `run ${created.runId} created; root agent ${created.rootAgentId} is ${created.state}\nfollow it: swarm tree ${created.runId}\n`,
    );
  return EXIT.OK;
}

/**
 * A JSON file, `-` for stdin, or the name of a spec saved with `swarm specs add`. A path (with a
 * `/` or ending `.json`) that is not there is said to be missing; a name neither a file nor saved
 * is said to be neither.
 */
export async function readSpec(ctx: CliContext, command: string, source: string): Promise<AgentSpec> {
  // Sent as read: the service is the judge of a spec, and its 400 names each failing field.
  if (source === "-" || existsSync(source)) return readJsonArg(command, source) as AgentSpec;
  if (source.includes("/") || source.endsWith(".json"))
    throw usage(command, `${source} does not exist (no such file${source.includes("/") ? "" : " in this folder"})`);
  const specs = await ctx.specs();
  try {
    return specs.get(source);
  } catch (err) {
    // No such saved spec, or one that no longer validates: say which, beside "not a file".
    throw usage(
      command,
      `${source} is neither a file nor a saved spec (swarm specs list): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
