import { z } from "zod";
import { Int } from "./fields.ts";
import { operation } from "./operation.ts";

/** The models a spec may name (spec sections 2.5, 2.7 and 4.21): the daemon's catalogue, keys never shown. */

export const KeySourceSchema = z
  .enum(["env", "file", "command", "none"])
  .describe(
    'Where the daemon would take the provider\'s key from: "env" (a variable of its environment), "file" (a literal key in the models file, `SWARM_MODELS`), "command" (a `!command` of the models file, run when a call is made; not run to answer this) or "none" (no key found: a call would fail with the gateway\'s 401). Never the key itself.',
  );

// pi-ai prices a router whose price depends on the model it picks (openrouter/auto) as negative.
const PerMillion = z.number();
export const ModelViewSchema = z
  .strictObject({
    provider: z.string().describe("What a spec's `model.provider` names."),
    id: z.string().describe("What a spec's `model.id` names."),
    name: z.string().describe("The model's display name."),
    api: z
      .string()
      .describe(
        "The wire API the gateway speaks to it: `anthropic-messages`, `openai-completions` or `openai-responses`.",
      ),
    contextWindow: Int.min(0).describe("Tokens of context."),
    maxTokens: Int.min(0).describe("Most output tokens of one answer."),
    cost: z
      .strictObject({ input: PerMillion, output: PerMillion, cacheRead: PerMillion, cacheWrite: PerMillion })
      .describe(
        "US dollars per million tokens of each kind: what `maxCostUsd` and `costUsd` are counted in. Negative: not known in advance (a router that picks the model).",
      ),
    key: KeySourceSchema,
  })
  .describe("One model a spec may name as `{provider, id}`.");
export const ModelListSchema = z.strictObject({
  models: z.array(ModelViewSchema).describe("By provider, then id."),
});

export const ModelListQuery = z.object({
  provider: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe("Only this provider's models (exact name, e.g. `anthropic`)."),
  available: z
    .enum(["true", "false"], { error: 'must be "true" or "false"' })
    .transform((value) => value === "true")
    .pipe(z.boolean())
    .default(false)
    .describe('`true`: only models whose key the daemon finds (`key` other than "none"). `false` (default): all.'),
});

export const listModels = operation({
  method: "get",
  path: "/models",
  operationId: "listModels",
  tag: "models",
  summary: "List the models a spec may name",
  description:
    "pi-ai's built-in models and the models file's, on an API the gateway carries, with their limits, prices and where their key would come from (never the key).",
  query: ModelListQuery,
  ok: { 200: { description: "The models.", json: ModelListSchema } },
  errors: { 400: "`provider` empty, or `available` other than `true` or `false`." },
});

export type KeySource = z.output<typeof KeySourceSchema>;
/** `GET /models`: one model a spec may name. */
export type ModelView = z.output<typeof ModelViewSchema>;
