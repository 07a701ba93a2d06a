import { intOption, parseCommandArgs, positionals, spendCapOptions, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson, SPEND_OPTIONS } from "./cli-context.ts";
import { refused } from "./control-command.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { readSpec } from "./run-command.ts";

/**
 * `swarm spawn <parentAgentId> <spec.json | saved-spec | -> [--prompt TEXT] [--wait-for AGENT]...`:
 * POST /runs/:runId/agents, a child forked from a live parent's sandbox; every field of the route
 * is a flag (`--keep-alive`, `--idempotency-key`, the budget flags of `swarm run`). The run is the
 * parent's, read from its view unless `--run` names it. A spawn a budget refused answers 202 but
 * makes no child that runs: it is said (`refused by a spawn budget`) and is exit 1, as is a parent
 * that ended or is draining (409).
 */
export async function spawnCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("spawn", args, {
    ...COMMON_OPTIONS,
    ...SPEND_OPTIONS,
    run: { type: "string" },
    prompt: { type: "string" },
    "wait-for": { type: "string", multiple: true },
    "keep-alive": { type: "boolean", default: false },
    "spawn-depth": { type: "string" },
    "max-agents": { type: "string" },
    "idempotency-key": { type: "string" },
  });
  const [parentAgentId = "", source = ""] = positionals("spawn", given, ["parentAgentId", "spec.json"]);
  const spec = await readSpec(ctx, "spawn", source);
  const spawnDepth = intOption("spawn", "spawn-depth", values["spawn-depth"], 0, 64, -1);
  const maxAgents = intOption("spawn", "max-agents", values["max-agents"], 0, 100_000, -1);
  const budget = {
    ...(spawnDepth >= 0 ? { spawnDepth } : {}),
    ...(maxAgents >= 0 ? { maxAgents } : {}),
    ...spendCapOptions("spawn", values),
  };
  const key = values["idempotency-key"];
  if (key !== undefined && (key.length < 1 || key.length > 256))
    throw usage("spawn", "--idempotency-key must be 1..256 characters");
  const client = ctx.client(values.url);
  const options = { signal: ctx.signal };
  const runId = values.run ?? (await client.getAgent(parentAgentId, options)).runId;
  const waitFor = values["wait-for"] ?? [];
  const spawned = await refused(ctx, client, "spawn under", parentAgentId, () =>
    client.spawn(
      runId,
      {
        parentAgentId,
        spec,
        ...(values.prompt !== undefined ? { prompt: values.prompt } : {}),
        ...(waitFor.length > 0 ? { waitFor } : {}),
        ...(Object.keys(budget).length > 0 ? { budget } : {}),
        ...(key !== undefined ? { idempotencyKey: key } : {}),
        ...(values["keep-alive"] ? { keepAlive: true } : {}),
      },
      options,
    ),
  );
  if (typeof spawned === "number") return spawned;
  // A budget's refusal is a 202 too: the child is recorded and ended at once, outcome budget-exceeded.
  const child = await client.getAgent(spawned.agentId, options);
  const budgetRefused = child.outcome === "budget-exceeded";
  if (values.json) printJson(ctx.io, { runId, ...spawned, ...(budgetRefused ? { outcome: child.outcome } : {}) });
  else if (budgetRefused)
    ctx.io.err(
      `swarm: ${spawned.agentId} refused by a spawn budget (spawnDepth or maxAgents) of ${parentAgentId}'s lineage: it ended budget-exceeded\n`,
    );
  else {
    const waiting = spawned.state === "spawning" ? `: it is forked once ${waitFor.join(", ")} settled or ended` : "";
    ctx.io.out(
      `agent ${spawned.agentId} spawned under ${parentAgentId} in run ${runId}; it is ${spawned.state}${waiting}\nfollow it: swarm tree ${runId}\n`,
    );
  }
  return budgetRefused ? EXIT.SERVICE : EXIT.OK;
}
