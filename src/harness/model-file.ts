import type { Api, Model } from "@mariozechner/pi-ai";
import * as z from "zod/mini";

/** The host every harness's model calls name; the harness sends them to its sandbox's gateway socket. */
export const GATEWAY_HOST = "gw.swarmd";

/**
 * What the daemon tells a harness about its model (`control/model.json`): pi-ai's model with its
 * `baseUrl` pointed at the gateway and no headers, and a placeholder key that only shapes the
 * request (an Anthropic OAuth token makes pi send OAuth-style requests). The real key and the
 * provider's headers stay in the daemon, which adds them on the way out. The daemon writes it
 * (`harnessModelFile` in src/gateway/harness-model.ts), the harness reads it (`gatewayModel` in
 * model.ts): the contract is the harness's, like the rest of its control folder (protocol.ts).
 */
export interface HarnessModelFile {
  model: Model<Api>;
  apiKey: string;
}

export const HarnessModelFileSchema = z.object({
  model: z.looseObject({ id: z.string(), provider: z.string(), api: z.string(), baseUrl: z.string() }),
  apiKey: z.string(),
});
