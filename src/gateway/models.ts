import { existsSync } from "node:fs";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
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
  /** The model a spec names, or a 400 naming `field` (`body.spec.model`). */
  resolve(ref: { provider: string; id: string }, field: string): GatewayModel;
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
          `${field}: unknown model ${ref.provider}/${ref.id} (neither one of pi-ai's built-in models nor in the models file)`,
        );
      if (!isTappedApi(model.api)) {
        throw new SwarmError(
          "INVALID_BODY",
          `${field}: ${ref.provider}/${ref.id} speaks the ${model.api} API, which the model gateway does not carry (it carries ${TAPPED_APIS.join(", ")})`,
        );
      }
      return model as GatewayModel;
    },
    async credentials(model) {
      const auth = await registry.getApiKeyAndHeaders(model);
      if (!auth.ok) throw new Error(auth.error);
      return { apiKey: auth.apiKey, headers: auth.headers };
    },
  };
}
