import type { ForkSpec } from "../swarm-api.ts";
import { MAX_FORK_COPIES } from "../swarm-api.ts";
import { intOption, parseCommandArgs, positionals, readJsonArg, spendCapOptions, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson, SPEND_OPTIONS } from "./cli-context.ts";
import { refused } from "./control-command.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { clip, columns, oneLine } from "./table-format.ts";

/** How much of each child's prompt its line shows; `--json` has the ids alone. */
const PROMPT_WIDTH = 60;

/**
 * `swarm fork <agentId> --prompt TEXT [--prompt TEXT]... | --count N --prompt TEXT`: POST
 * /agents/:agentId/fork, children of an agent between turns, each from its conversation and /work
 * now: one per `--prompt`, or N given the same one. `--spec FILE` (or `-`) holds changes to the
 * agent's spec for them (`name`, `model` or `script`, `approve`, `limits`, caps), `--name` renames
 * them; the budget flags of `swarm spawn`. Children stay live after their turn unless
 * `--no-keep-alive`. Prints one line per child and how to wait for them; an agent in a turn (409,
 * `AGENT_BUSY`), ended or draining is exit 1, as is a child a spawn budget refused.
 */
export async function forkCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("fork", args, {
    ...COMMON_OPTIONS,
    ...SPEND_OPTIONS,
    prompt: { type: "string", short: "p", multiple: true },
    count: { type: "string" },
    spec: { type: "string" },
    name: { type: "string" },
    "no-keep-alive": { type: "boolean", default: false },
    "spawn-depth": { type: "string" },
    "max-agents": { type: "string" },
  });
  const [agentId = ""] = positionals("fork", given, ["agentId"]);
  const prompts = values.prompt ?? [];
  if (prompts.length === 0) throw usage("fork", "missing --prompt: one child per --prompt, or --count N with one");
  let tries: { prompts: string[] } | { count: number; prompt: string };
  if (values.count !== undefined) {
    const count = intOption("fork", "count", values.count, 1, MAX_FORK_COPIES, 1);
    if (prompts.length > 1) throw usage("fork", "--count takes one --prompt, which every child is given");
    tries = { count, prompt: prompts[0] ?? "" };
  } else {
    if (prompts.length > MAX_FORK_COPIES)
      throw usage("fork", `at most ${MAX_FORK_COPIES} children: ${prompts.length} --prompt given`);
    tries = { prompts };
  }
  const spec = forkSpec(values.spec, values.name);
  const spawnDepth = intOption("fork", "spawn-depth", values["spawn-depth"], 0, 64, -1);
  const maxAgents = intOption("fork", "max-agents", values["max-agents"], 0, 100_000, -1);
  const budget = {
    ...(spawnDepth >= 0 ? { spawnDepth } : {}),
    ...(maxAgents >= 0 ? { maxAgents } : {}),
    ...spendCapOptions("fork", values),
  };
  const keepAlive = !values["no-keep-alive"];
  const client = ctx.client(values.url);
  const options = { signal: ctx.signal };
  const forked = await refused(ctx, client, "fork", agentId, () =>
    client.fork(
      agentId,
      {
        ...tries,
        ...(spec !== undefined ? { spec } : {}),
        ...(Object.keys(budget).length > 0 ? { budget } : {}),
        keepAlive,
      },
      options,
    ),
  );
  if (typeof forked === "number") return forked;

  // A child a budget refused is listed too, ended at once with outcome budget-exceeded.
  const { runId } = await client.getAgent(agentId, options);
  const { agents } = await client.getRun(runId, options);
  const refusedIds = forked.agentIds.filter(
    (id) => agents.find((a) => a.agentId === id)?.outcome === "budget-exceeded",
  );
  if (values.json)
    printJson(ctx.io, {
      runId,
      agentIds: forked.agentIds,
      ...(refusedIds.length > 0 ? { budgetExceeded: refusedIds } : {}),
    });
  else {
    const n = forked.agentIds.length;
    const after = keepAlive ? "each stays live after its turn, to be compared" : "each ends after its turn";
    const promptOf = (i: number) => ("prompts" in tries ? tries.prompts[i] : tries.prompt) ?? "";
    const rows = forked.agentIds.map((id, i) => [id, clip(oneLine(promptOf(i)), PROMPT_WIDTH)]);
    ctx.io.out(
      [
        `forked ${agentId} into ${n} agent${n === 1 ? "" : "s"} in run ${runId}; ${after}`,
        ...columns(rows),
        `wait for them: swarm wait ${runId} ${forked.agentIds.join(" ")}`,
        "",
      ].join("\n"),
    );
    for (const id of refusedIds)
      ctx.io.err(
        `swarm: ${id} refused by a spawn budget (spawnDepth or maxAgents) of ${agentId}'s lineage: it ended budget-exceeded\n`,
      );
  }
  return refusedIds.length > 0 ? EXIT.SERVICE : EXIT.OK;
}

/** The changes `--spec` holds (sent as read: the service judges them), renamed by `--name`. */
function forkSpec(source: string | undefined, name: string | undefined): ForkSpec | undefined {
  const read = source === undefined ? {} : readJsonArg("fork", source);
  if (typeof read !== "object" || read === null || Array.isArray(read))
    throw usage("fork", `--spec ${source} must hold a JSON object: the changes to the agent's spec`);
  const spec = { ...read, ...(name !== undefined ? { name } : {}) } as ForkSpec;
  return Object.keys(spec).length > 0 ? spec : undefined;
}
