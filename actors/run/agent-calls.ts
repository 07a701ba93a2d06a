import { z } from "zod";
import { ForkSpecSchema } from "../../src/api/forks.ts";
import { MAX_WAIT_AGENTS } from "../../src/api/limits.ts";
import { errorMessage, isSwarmError, SwarmError } from "../../src/errors.ts";
import { type HostCallMessage, hostCallTool } from "../../src/harness/protocol.ts";
import type { ToolRefusal } from "../../src/ledger/run-events.ts";
import { AgentSpecSchema, BudgetSchema } from "../../src/spec/agent-spec.ts";
import type { ApproveRule } from "../../src/spec/approve.ts";
import { DAEMON_GATED_TOOLS, needsApproval } from "../../src/spec/approve.ts";
import type {
  ForkResponse,
  ResultView,
  SpawnRequest,
  SpawnResponse,
  WaitRequest,
  WaitResponse,
} from "../../src/swarm-api.ts";
import { MAX_FORK_COPIES, MAX_WAIT_SECONDS } from "../../src/swarm-api.ts";
import { parseOrThrow } from "../../src/validation.ts";
import type { ForkFromInside } from "./forks.ts";
import type { Permissions } from "./permissions.ts";
import { denialText } from "./permissions.ts";
import type { Supervisor } from "./supervisor.ts";

/** What an agent's own calls need of the run. */
export interface AgentCallDeps {
  /** The agent's approval policy (its ancestors' rules and its own). */
  policyOf(agentId: string): ApproveRule[];
  permissions: Pick<Permissions, "ask">;
  supervisor: Pick<Supervisor, "requireNotDraining">;
  spawn(request: SpawnRequest, root: string): Promise<SpawnResponse>;
  /** Copies of the calling agent from this very call (`spawn_agent` with `fork: true`). */
  fork(agentId: string, call: ForkFromInside): Promise<ForkResponse>;
  /** Results of several agents: all, or the first success. */
  waitMany(request: Pick<WaitRequest, "agentIds" | "mode" | "timeoutMs">, signal?: AbortSignal): Promise<WaitResponse>;
  /** Whether the agent belongs to this run. */
  recorded(agentId: string): boolean;
  result(agentId: string, waitSeconds: number, signal?: AbortSignal): Promise<ResultView>;
  /** Record a call swarmd refused or could not carry out as the agent's `tool_refused` (never throws). */
  refused(agentId: string, refusal: ToolRefusal): void;
}

const SpawnParams = z.strictObject({
  spec: AgentSpecSchema,
  prompt: z.string().optional(),
  waitFor: z.array(z.string()).optional(),
  budget: BudgetSchema.optional(),
});
/** `spawn_agent` with `fork: true`: copies of the caller, each with its own prompt; `toolCallId` is the harness's. */
const ForkParams = z.strictObject({
  fork: z.literal(true),
  prompts: z.array(z.string().min(1)).min(1).max(MAX_FORK_COPIES),
  spec: ForkSpecSchema.optional(),
  budget: BudgetSchema.optional(),
  toolCallId: z.string().min(1).max(256),
});
const AwaitParams = z
  .strictObject({
    agentId: z.string().optional(),
    agentIds: z.array(z.string()).min(1).max(MAX_WAIT_AGENTS).optional(),
    mode: z.enum(["all", "first"]).optional(),
    waitSeconds: z.number().int().min(0).max(MAX_WAIT_SECONDS).default(MAX_WAIT_SECONDS),
  })
  .refine((p) => (p.agentId === undefined) !== (p.agentIds === undefined), {
    message: "give agentId, or agentIds",
    path: ["agentId"],
  })
  .refine((p) => p.mode === undefined || p.agentIds !== undefined, {
    message: "is only for agentIds",
    path: ["mode"],
  });
/** A tool call the harness holds for the agent's `approve` policy (the tools other than the two above). */
const PermissionParams = z.strictObject({ tool: z.string().min(1).max(64), args: z.record(z.string(), z.unknown()) });

/** The answer to a `permission` call: the harness blocks the tool call on a deny, with `message` as its error. */
interface PermissionReply {
  decision: "allow" | "deny";
  message: string | null;
}

/**
 * An agent's own `spawn_agent` / `await_result`. Spawns go through the same path as
 * `POST /runs/:runId/agents`, under the calling agent, with the harness's call id as idempotency
 * key (a call re-sent after a reconnect or a restart returns the same child). An agent can only
 * reach agents of its own run. Both wait for the operator first when the agent's `approve` policy
 * holds them; `permission` asks the same for the tools the harness gates.
 *
 * What is refused here (a call that fails, an approval denied) is recorded as the agent's
 * `tool_refused`, but not a call given up because its connection closed: the harness sends it
 * again, or the agent ended.
 */
export async function answerAgentCall(
  deps: AgentCallDeps,
  agentId: string,
  call: HostCallMessage,
  signal?: AbortSignal,
): Promise<unknown> {
  const tool = hostCallTool(call);
  try {
    const answer = await answerCall(deps, agentId, call, signal);
    if ("decision" in answer && answer.decision === "deny" && !signal?.aborted)
      deps.refused(agentId, { tool, code: "PERMISSION_DENIED", message: answer.message ?? "denied" });
    return answer;
  } catch (err) {
    if (!signal?.aborted)
      deps.refused(agentId, { tool, code: isSwarmError(err) ? err.code : "INTERNAL", message: errorMessage(err) });
    throw err;
  }
}

async function answerCall(
  deps: AgentCallDeps,
  agentId: string,
  call: HostCallMessage,
  signal?: AbortSignal,
): Promise<PermissionReply | SpawnResponse | ForkResponse | ResultView | WaitResponse> {
  const policy = deps.policyOf(agentId);
  if (call.method === "permission") {
    const { tool, args } = parseOrThrow(PermissionParams, call.params, "params");
    // The daemon decides whether the policy holds the call: a harness cannot fill the inbox with others.
    if (DAEMON_GATED_TOOLS.has(tool) || !needsApproval(policy, tool, args)) return { decision: "allow", message: null };
    const { decision, message, by } = await deps.permissions.ask(agentId, call.id, tool, args, signal);
    return { decision, message: decision === "deny" ? denialText({ decision, message, by }) : message };
  }
  // A draining agent starts no children: refused before anyone is asked to approve it.
  if (call.method === "spawn_agent") deps.supervisor.requireNotDraining(agentId);
  // spawn_agent and await_result are gated here, before they do anything.
  if (needsApproval(policy, call.method, call.params)) {
    const decided = await deps.permissions.ask(agentId, call.id, call.method, call.params, signal);
    if (decided.decision === "deny") throw new SwarmError("PERMISSION_DENIED", denialText(decided));
  }
  if (call.method === "spawn_agent") {
    if (call.params.fork === true) {
      const { prompts, spec, budget, toolCallId } = parseOrThrow(ForkParams, call.params, "params");
      return deps.fork(agentId, { prompts, spec, budget, toolCallId, callId: call.id });
    }
    const params = parseOrThrow(SpawnParams, call.params, "params");
    return deps.spawn({ ...params, parentAgentId: agentId, idempotencyKey: `host:${call.id}` }, "params");
  }
  const params = parseOrThrow(AwaitParams, call.params, "params");
  const named = params.agentIds ?? [params.agentId!];
  const outside = named.filter((id) => !deps.recorded(id));
  if (outside.length > 0)
    throw new SwarmError("AGENT_NOT_FOUND", `agent ${outside.join(", ")} is not an agent of this run`);
  if (params.agentIds === undefined) return deps.result(named[0]!, params.waitSeconds, signal);
  return deps.waitMany(
    { agentIds: named, mode: params.mode ?? "all", timeoutMs: Math.max(1, params.waitSeconds * 1000) },
    signal,
  );
}
