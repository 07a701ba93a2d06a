import { calculateCost } from "@mariozechner/pi-ai";
import type { GatewayModel } from "./gateway-model.ts";
import type { CallUsage } from "./model-caller.ts";
import type { TokenCounts } from "./usage-tap.ts";

/** A finished call's usage record, priced with pi-ai's own formula and the model's prices. */
export function callUsage(
  model: GatewayModel,
  counts: TokenCounts | null,
  callId: string,
  durationMs: number,
  heldMs = 0,
): CallUsage {
  const c = counts ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const cost = calculateCost(model, {
    ...c,
    totalTokens: c.input + c.output + c.cacheRead + c.cacheWrite,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  });
  return {
    callId,
    provider: model.provider,
    model: model.id,
    inputTokens: c.input,
    outputTokens: c.output,
    cacheReadTokens: c.cacheRead,
    cacheWriteTokens: c.cacheWrite,
    costUsd: cost.total,
    durationMs,
    heldMs,
    usageKnown: counts !== null,
  };
}
