import { existsSync } from "node:fs";
import type { Api, Model } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { KeySource, ModelView } from "../api/models.ts";
import { closest } from "../closest.ts";
import { SwarmError } from "../errors.ts";
import type { GatewayModel } from "./gateway-model.ts";
import { SCRIPTED_MODEL } from "./scripted-model.ts";
import { isTappedApi, TAPPED_APIS } from "./usage-tap.ts";

/** What a provider call needs that the sandbox never sees: the key and the provider's own headers. */
export interface Credentials {
  apiKey?: string;
  headers?: Record<string, string>;
}

/**
 * The daemon's model catalogue: pi-ai's built-in models plus the custom providers of the models
 * file (`SWARM_MODELS`, pi's own `models.json` format), loaded once with pi-coding-agent's own
 * registry. Keys are resolved here, in the daemon, from its environment or the models file, when a
 * call is made; nothing of them is ever written where a sandbox can read it.
 */
export interface ModelCatalog {
  /** The model a spec names, or a 400 naming `field` (`body.spec.model`) and the closest ids there are. */
  resolve(ref: { provider: string; id: string }, field: string): GatewayModel;
  /**
   * Every model a spec may name (`GET /models`), by provider then id, with where its key would come
   * from. Reads no key and runs no `!command`: the answer never holds a key or a command's output.
   */
  list(): ModelView[];
  credentials(model: GatewayModel): Promise<Credentials>;
}

export function loadModelCatalog(modelsFile?: string): ModelCatalog {
  // pi skips a missing file silently; a file the operator named and that is not there is a mistake.
  if (modelsFile !== undefined && !existsSync(modelsFile))
    throw new SwarmError("CONFIG_INVALID", `invalid configuration: SWARM_MODELS=${modelsFile}: no such file`);
  // In memory: pi's own ~/.pi/agent/auth.json is never read; keys come from the environment or the file.
  // No file named: the built-in models alone (`create` would read the user's ~/.pi/agent/models.json).
  const auth = AuthStorage.inMemory();
  const registry = modelsFile === undefined ? ModelRegistry.inMemory(auth) : ModelRegistry.create(auth, modelsFile);
  const problem = registry.getError();
  if (modelsFile && problem)
    throw new SwarmError("CONFIG_INVALID", `invalid configuration: SWARM_MODELS=${modelsFile}: ${problem}`);
  // Fixed at load: the models a spec may name, in the order `GET /models` lists them.
  const nameable = registry
    .getAll()
    .filter((model) => isTappedApi(model.api))
    .sort((a, b) => compare(a.provider, b.provider) || compare(a.id, b.id));
  return {
    resolve(ref, field) {
      if (ref.provider === SCRIPTED_MODEL.provider)
        throw new SwarmError(
          "INVALID_BODY",
          `${field}: provider ${ref.provider} is swarmd's scripted model; give a script instead`,
        );
      const model = registry.find(ref.provider, ref.id);
      if (!model)
        throw new SwarmError(
          "INVALID_BODY",
          `${field}: unknown model ${ref.provider}/${ref.id} (neither one of pi-ai's built-in models nor in the models file)${suggestion(ref, nameable)}`,
        );
      if (!isTappedApi(model.api)) {
        throw new SwarmError(
          "INVALID_BODY",
          `${field}: ${ref.provider}/${ref.id} speaks the ${model.api} API, which the model gateway does not carry (it carries ${TAPPED_APIS.join(", ")})`,
        );
      }
      return model as GatewayModel;
    },
    list: () =>
      nameable.map((model) => ({
        provider: model.provider,
        id: model.id,
        name: model.name,
        api: model.api,
        contextWindow: model.contextWindow,
        maxTokens: model.maxTokens,
        cost: { ...model.cost },
        key: keySource(registry, model.provider),
      })),
    async credentials(model) {
      const auth = await registry.getApiKeyAndHeaders(model);
      if (!auth.ok) throw new Error(auth.error);
      return { apiKey: auth.apiKey, headers: auth.headers };
    },
  };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const refOf = (model: Model<Api>): string => `${model.provider}/${model.id}`;

/**
 * `; closest: a/b, c/d` naming the models nearest to what was asked, by the whole `provider/id` and
 * by the id alone (a right id under the wrong provider), those of the asked provider first; empty
 * when none is near.
 */
function suggestion(ref: { provider: string; id: string }, models: readonly Model<Api>[]): string {
  const sameProvider = models.filter((model) => model.provider === ref.provider);
  const found = [
    ...closest(ref.id, sameProvider, 3, (model) => model.id),
    ...closest(`${ref.provider}/${ref.id}`, models, 3, refOf),
    ...closest(ref.id, models, 3, (model) => model.id),
  ];
  const names = [...new Set(found.map(refOf))].slice(0, 3);
  return names.length === 0 ? "" : `; closest: ${names.join(", ")} (GET /models lists them all)`;
}

/**
 * Where a call's key would come from, as the registry would look (its environment variable, then
 * the models file's `apiKey`: a variable's name, a `!command` or a literal key), decided without
 * reading the key or running the command (`getProviderAuthStatus`).
 */
function keySource(registry: ModelRegistry, provider: string): KeySource {
  switch (registry.getProviderAuthStatus(provider).source) {
    case "environment":
      return "env";
    case "models_json_command":
      return "command";
    case "models_json_key":
      return "file";
    default:
      // pi's stored, runtime and fallback keys: an in-memory store holds none of them.
      return "none";
  }
}
