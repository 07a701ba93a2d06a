import type { Model } from "@mariozechner/pi-ai";
import type { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { createScriptedModel } from "./scripted-model.ts";

/**
 * The model an agent spec asks for: its `script` through pi-ai's faux provider, or a real model
 * from pi-ai's registry whose API key comes from the environment (for example ANTHROPIC_API_KEY).
 */
export function resolveModel(spec: AgentSpec, registry: ModelRegistry, auth: AuthStorage): Model<string> {
  if (spec.script) {
    const model = createScriptedModel(spec.script);
    // The session refuses models without credentials; a script needs none.
    auth.setRuntimeApiKey(model.provider, "scripted");
    return model;
  }
  if (!spec.model) throw new Error("the spec names neither a model nor a script");
  const model = registry.find(spec.model.provider, spec.model.id);
  if (!model) throw new Error(`unknown model ${spec.model.provider}/${spec.model.id}`);
  return model;
}
