import type { ModelView } from "../swarm-api.ts";
import { parseCommandArgs, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { compactTokens } from "./spend-format.ts";
import { columns, oneLine } from "./table-format.ts";

/**
 * `swarm models [filter] [--provider NAME] [--available]`: GET /models, the models a spec may name,
 * as a table: `provider/id` (what a spec's `model` names), name, API, context window, most output
 * tokens, price per million input and output tokens, and where the key would come from (`env`,
 * `file`, `command`, `none`; never the key). `filter` keeps those whose provider, id or name holds
 * it (any case). `--json` prints the service's `{"models": [...]}`, filtered alike. None is a note
 * on stderr and exit 0.
 */
export async function modelsCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("models", args, {
    ...COMMON_OPTIONS,
    provider: { type: "string" },
    available: { type: "boolean", default: false },
  });
  if (given.length > 1) throw usage("models", `unexpected argument ${JSON.stringify(given[1])}`);
  const filter = given[0];
  const answer = await ctx
    .client(values.url)
    .listModels({ provider: values.provider, available: values.available }, { signal: ctx.signal });
  const wanted = filter?.toLowerCase();
  const models = wanted
    ? answer.models.filter((m) => `${m.provider}/${m.id} ${m.name}`.toLowerCase().includes(wanted))
    : answer.models;
  if (values.json) printJson(ctx.io, { models });
  else if (models.length === 0)
    ctx.io.err(
      `no models${filter ? ` matching ${JSON.stringify(filter)}` : ""}${values.provider ? ` of provider ${values.provider}` : ""}${values.available ? " with a key" : ""}\n`,
    );
  else ctx.io.out(`${modelTable(models).join("\n")}\n`);
  return EXIT.OK;
}

/** One line per model: what a spec names, and what it costs and holds. */
export function modelTable(models: readonly ModelView[]): string[] {
  // Negative: a router whose price is the model it picks, not known in advance.
  const usd = (perMillion: number) => (perMillion < 0 ? "?" : `$${Number(perMillion.toFixed(4))}`);
  const rows = models.map((m) => [
    `${m.provider}/${m.id}`,
    oneLine(m.name),
    m.api,
    compactTokens(m.contextWindow),
    compactTokens(m.maxTokens),
    `${usd(m.cost.input)}/${usd(m.cost.output)}`,
    m.key,
  ]);
  return columns([["MODEL (provider/id)", "NAME", "API", "CONTEXT", "OUTPUT", "$/M IN/OUT", "KEY"], ...rows]);
}
