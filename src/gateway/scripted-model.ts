import type { GatewayModel } from "./gateway-model.ts";

/**
 * The model a spec's `script` answers as: swarmd's own upstream in the daemon, spoken to over the
 * Anthropic Messages wire format by pi-ai's real Anthropic client, so scripted agents take the same
 * path as real ones (gateway socket, pacing, budgets, metering). Its prices are made up but fixed,
 * so spend budgets can be tested exactly: $1 per million input tokens, $5 per million output. Its
 * context has no practical limit, so pi never compacts a scripted session (a compaction would spend a
 * script step on its summary).
 */
export const SCRIPTED_MODEL: GatewayModel = {
  id: "scripted",
  name: "Scripted model",
  api: "anthropic-messages",
  provider: "swarmd-script",
  baseUrl: "http://script.swarmd",
  reasoning: false,
  input: ["text"],
  cost: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  contextWindow: 1_000_000_000,
  maxTokens: 16_384,
};
