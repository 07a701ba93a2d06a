import { GATEWAY_HOST, type HarnessModelFile } from "../harness/model-file.ts";
import type { GatewayModel } from "./gateway-model.ts";

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
