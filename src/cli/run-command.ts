import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { intOption, positionals, usage } from "./args.ts";
import { COMMON_OPTIONS, printJson, type CliContext } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm run <spec.json | saved-spec | -> [--prompt TEXT]`: POST /runs. The spec is sent as read;
 * the service validates it (a 400 names the failing fields, exit 1).
 */
export async function runCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...COMMON_OPTIONS,
      prompt: { type: "string" },
      "keep-alive": { type: "boolean", default: false },
      "spawn-depth": { type: "string" },
      "max-agents": { type: "string" },
    },
  });
  const [source = ""] = positionals("run", given, ["spec.json"]);
  const spec = await readSpec(ctx, source);
  const spawnDepth = intOption("run", "spawn-depth", values["spawn-depth"], 0, 64, -1);
  const maxAgents = intOption("run", "max-agents", values["max-agents"], 0, 100_000, -1);
  const budget = { ...(spawnDepth >= 0 ? { spawnDepth } : {}), ...(maxAgents >= 0 ? { maxAgents } : {}) };
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
  else ctx.io.out(`run ${created.runId} created; root agent ${created.rootAgentId} is ${created.state}\nfollow it: swarm tree ${created.runId}\n`);
  return EXIT.OK;
}

/** A JSON file, `-` for stdin, or the name of a spec saved with `swarm specs add`. */
async function readSpec(ctx: CliContext, source: string): Promise<AgentSpec> {
  let text: string;
  if (source === "-") text = readFileSync(0, "utf8");
  else if (existsSync(source)) {
    try {
      text = readFileSync(source, "utf8");
    } catch (err) {
      throw usage("run", `cannot read ${source}: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else {
    const specs = await ctx.specs();
    if (specs.list().specs.some((s) => s.name === source)) return specs.get(source);
    throw usage("run", `${source} is neither a file nor a saved spec (swarm specs list)`);
  }
  try {
    // Sent as read: the service is the judge of a spec, and its 400 names each failing field.
    return JSON.parse(text) as AgentSpec;
  } catch (err) {
    throw usage("run", `${source} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
