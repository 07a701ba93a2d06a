import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { Api, Model } from "@mariozechner/pi-ai";
import type { AuthStorage } from "@mariozechner/pi-coding-agent";
import { memoryControl } from "./memory-control.ts";
import { GATEWAY_HOST, HarnessModelFileSchema } from "./model-file.ts";
import { routeModelCalls } from "./model-transport.ts";
import { CONTROL_FILES } from "./protocol.ts";

/**
 * The model the daemon gave this harness (`<control>/model.json`), its calls routed to the
 * sandbox's gateway socket (`<control>/model.sock`), or through `dial` when given (a harness in
 * stdio mode: a channel of its stream), or, for a control folder kept in memory (a simulated
 * sandbox), its file and its gateway in this process. Real provider or script alike, the
 * harness only ever holds a placeholder key: the daemon adds the real one.
 */
export function gatewayModel(
  controlDir: string,
  auth: AuthStorage,
  dial?: () => Duplex,
): { model: Model<Api>; release(): void } {
  const memory = memoryControl(controlDir);
  const text = memory
    ? memory.files.get(CONTROL_FILES.model)
    : readFileSync(join(controlDir, CONTROL_FILES.model), "utf8");
  if (text === undefined) throw new Error(`the daemon wrote no ${CONTROL_FILES.model} for ${controlDir}`);
  const file = HarnessModelFileSchema.parse(JSON.parse(text));
  const route = routeModelCalls(
    memory
      ? { dial: () => memory.dial(CONTROL_FILES.modelSocket) }
      : dial
        ? { dial }
        : { socketPath: join(controlDir, CONTROL_FILES.modelSocket) },
  );
  const url = new URL(file.model.baseUrl);
  if (url.hostname !== GATEWAY_HOST)
    throw new Error(`the model's baseUrl ${file.model.baseUrl} does not name the gateway`);
  url.hostname = route.host;
  const model = { ...file.model, baseUrl: url.toString().replace(/\/$/, "") } as Model<Api>;
  // The session refuses a model without credentials; the placeholder also keeps a process's own
  // environment (the memory runtime's harness shares the daemon's) from supplying a key.
  auth.setRuntimeApiKey(model.provider, file.apiKey);
  return { model, release: route.release };
}
