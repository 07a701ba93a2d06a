import { z } from "zod";
import { SwarmError } from "../../src/errors.ts";
import type { HostCallMessage } from "../../src/harness/protocol.ts";
import { AgentSpecSchema, BudgetSchema } from "../../src/spec/agent-spec.ts";
import { MAX_WAIT_SECONDS } from "../../src/swarm-api.ts";
import { parseOrThrow } from "../../src/validation.ts";
import type { Run } from "./run.ts";

const SpawnParams = z.strictObject({
  spec: AgentSpecSchema,
  prompt: z.string().optional(),
  waitFor: z.array(z.string()).optional(),
  budget: BudgetSchema.optional(),
});
const AwaitParams = z.strictObject({ agentId: z.string(), waitSeconds: z.number().int().min(0).max(MAX_WAIT_SECONDS).default(MAX_WAIT_SECONDS) });

/**
 * An agent's own `spawn_agent` / `await_result`. Spawns go through the same path as
 * `POST /runs/:runId/agents`, under the calling agent, with the harness's call id as idempotency
 * key (a call re-sent after a reconnect or a restart returns the same child). An agent can only
 * reach agents of its own run.
 */
export async function answerAgentCall(run: Run, agentId: string, call: HostCallMessage): Promise<unknown> {
  if (call.method === "spawn_agent") {
    const params = parseOrThrow(SpawnParams, call.params, "params");
    return run.spawn({ ...params, parentAgentId: agentId, idempotencyKey: `host:${call.id}` }, "params");
  }
  const params = parseOrThrow(AwaitParams, call.params, "params");
  if (!run.has(params.agentId)) throw new SwarmError("AGENT_NOT_FOUND", `agent ${params.agentId} is not an agent of this run`);
  return run.result(params.agentId, params.waitSeconds);
}
