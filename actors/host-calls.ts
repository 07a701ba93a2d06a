import { z } from "zod";
import { SwarmError } from "../src/errors.ts";
import type { HostCallMessage } from "../src/harness/protocol.ts";
import { AgentSpecSchema } from "../src/spec/agent-spec.ts";
import { runOf } from "./controls.ts";
import type { ServiceCore } from "./service-core.ts";
import { spawnAgent } from "./spawn.ts";
import { readResult } from "./swarm-service.ts";

const BudgetSchema = z.strictObject({ spawnDepth: z.number().int().min(0).optional(), maxAgents: z.number().int().min(0).optional() });
const SpawnParams = z.strictObject({
  spec: AgentSpecSchema,
  prompt: z.string().optional(),
  waitFor: z.array(z.string()).optional(),
  budget: BudgetSchema.optional(),
});
const AwaitParams = z.strictObject({ agentId: z.string(), waitSeconds: z.number().int().min(0).max(240).default(240) });

/**
 * An agent's own `spawn_agent` / `await_result`. Spawns go through the same path as
 * `POST /runs/:runId/agents`, under the calling agent, with the harness's call id as idempotency
 * key (a call re-sent after a reconnect or a restart returns the same child). An agent can only
 * reach agents of its own run.
 */
export async function answerHostCall(core: ServiceCore, agentId: string, call: HostCallMessage): Promise<unknown> {
  const run = runOf(core, agentId);
  if (call.method === "spawn_agent") {
    const params = parse(SpawnParams, call.params);
    return spawnAgent(core, run.runId, { ...params, parentAgentId: agentId, idempotencyKey: `host:${call.id}` });
  }
  const params = parse(AwaitParams, call.params);
  if (core.agentRuns.get(params.agentId) !== run.runId) throw new SwarmError("AGENT_NOT_FOUND", `agent ${params.agentId} is not an agent of this run`);
  return readResult(core, params.agentId, params.waitSeconds);
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(params)"}: ${i.message}`).join("; ");
  throw new SwarmError("INVALID_BODY", problems);
}
