import type { Api, Model } from "@mariozechner/pi-ai";
import { z } from "zod";
import type { GatewayModel } from "./models.ts";

/** The host every harness's model calls name; the harness sends them to its sandbox's gateway socket. */
export const GATEWAY_HOST = "gw.swarmd";

/**
 * What the daemon tells a harness about its model (`control/model.json`): pi-ai's model with its
 * `baseUrl` pointed at the gateway and no headers, and a placeholder key that only shapes the
 * request (an Anthropic OAuth token makes pi send OAuth-style requests). The real key and the
 * provider's headers stay in the daemon, which adds them on the way out.
 */
export interface HarnessModelFile {
  model: Model<Api>;
  apiKey: string;
}

export const HarnessModelFileSchema = z.object({
  model: z.looseObject({ id: z.string(), provider: z.string(), api: z.string(), baseUrl: z.string() }),
  apiKey: z.string(),
});

/**
 * The gateway base URL for a provider base URL: `https://api.openai.com/v1` becomes
 * `http://gw.swarmd/u/api.openai.com/v1`. The original host stays in the path because pi-ai
 * detects provider quirks from substrings of `baseUrl`.
 */
export function gatewayBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `http://${GATEWAY_HOST}/u/${url.host}${url.pathname.replace(/\/$/, "")}`;
}

/** The model file for a model, given whether the daemon's key for it is an Anthropic OAuth token. */
export function harnessModelFile(model: GatewayModel, oauth: boolean): HarnessModelFile {
  const { headers: _headers, ...rest } = model;
  return {
    model: { ...rest, baseUrl: gatewayBaseUrl(model.baseUrl) },
    apiKey: oauth ? "sk-ant-oat-swarmd-gateway" : "swarmd-gateway",
  };
}
