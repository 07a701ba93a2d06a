import { z } from "zod";
import { HARNESS_RECORDED_EVENT_NAMES } from "../harness/protocol.ts";

/**
 * Every persisted event of a run (spec §6.1, §6.2) as one typed union, inferred from the schemas
 * below. The service writes them as `RunEventInput`, the run view folds them as `RunEvent`
 * (decoded with `decodeRunEvent`): one module, so a field added here is added for every writer
 * and reader at once.
 */

const Outcome = z.enum(["success", "failed", "aborted", "budget-exceeded", "lost"]);
const LiveState = z.enum(["spawning", "provisioning", "running", "paused"]);
const AgentId = z.string();
/** After the forked agent's `turn`-th settled turn, or at a `spawn_agent` call (`toolCallId`) inside turn `turn`. */
const ForkPoint = z.object({ turn: z.number().int(), toolCallId: z.string().optional() });

const event = <T extends string, A extends z.ZodType, D extends z.ZodType>(type: T, agentId: A, data: D) =>
  z.object({ type: z.literal(type), agentId, data });

export const RunEventSchema = z.discriminatedUnion("type", [
  event("run_started", z.null(), z.object({ runId: z.string() })),
  event(
    "agent_spawned",
    AgentId,
    z.object({
      parentAgentId: z.string().nullable(),
      runId: z.string(),
      specName: z.string(),
      depth: z.number().int(),
      spawnIndex: z.number().int(),
      sandboxId: z.null(),
      waitFor: z.array(z.string()),
      prompt: z.string().nullable(),
      /** Only a fork child's: the agent and point it was forked from (its conversation and /work). */
      forkedFrom: z.object({ agentId: z.string(), forkPoint: ForkPoint }).optional(),
    }),
  ),
  /** The agent was forked: `children` start from its conversation and /work at `forkPoint`. */
  event("agent_forked", AgentId, z.object({ children: z.array(z.string()), forkPoint: ForkPoint })),
  /** A fork child's changes were applied to the agent's /work (`POST /agents/:agentId/adopt`). */
  event(
    "changes_adopted",
    AgentId,
    z.object({
      from: z.string(),
      files: z.array(z.object({ path: z.string(), change: z.enum(["added", "modified", "deleted"]) })),
    }),
  ),
  /** `node`: the node its sandbox runs on (`local` on single-host runtimes); absent in ledgers older than it. */
  event("agent_provisioned", AgentId, z.object({ sandboxId: z.string(), node: z.string().optional() })),
  /** The daemon lost the engine of the node the agent's sandbox runs on; the sandbox may still run there. */
  event("agent_unreachable", AgentId, z.object({ node: z.string() })),
  /** The daemon reaches the node of the agent's sandbox again (after `agent_unreachable`). */
  event("agent_reachable", AgentId, z.object({ node: z.string() })),
  /** `reason` of a pause is who paused it, `operator`, `cascade` or `budget` (the view's `pausedBy`). */
  event("agent_state_changed", AgentId, z.object({ from: z.string(), to: LiveState, reason: z.string() })),
  event("agent_steered", AgentId, z.object({ message: z.string() })),
  /** A turn's result; its text is in the result store under `resultRef`. */
  event("handle_settled", AgentId, z.object({ outcome: Outcome, resultRef: z.string().nullable() })),
  /** `reason`: present when a drain ended it (`drained`) or its deadline aborted it (`drain-timeout`). */
  event(
    "agent_ended",
    AgentId,
    z.object({
      outcome: Outcome,
      endedAt: z.number(),
      error: z.string().nullable(),
      reason: z.enum(["drained", "drain-timeout"]).optional(),
    }),
  ),
  /** A drain reached the agent: no new prompt, steer or spawn; it ends once its turn settles, or is aborted at `deadline`. */
  event("agent_draining", AgentId, z.object({ subtree: z.boolean(), deadline: z.number() })),
  /**
   * A tool call the agent's `approve` policy holds until a decision (`expiresAt`: when
   * `approveTimeoutMs` denies it). The request's time is the event's `at`.
   */
  event(
    "permission_request",
    AgentId,
    z.object({
      requestId: z.string(),
      tool: z.string(),
      args: z.record(z.string(), z.unknown()),
      expiresAt: z.number().nullable(),
    }),
  ),
  event(
    "permission_resolved",
    AgentId,
    z.object({
      requestId: z.string(),
      decision: z.enum(["allow", "deny"]),
      message: z.string().nullable(),
      by: z.enum(["operator", "stop", "run-deleted", "timeout"]),
    }),
  ),
  /** A spawn refused (`childAgentId` the refused child), or a model call held on a spend cap (the subtree is paused). */
  event(
    "budget_denied",
    AgentId,
    z.object({
      dimension: z.enum(["spawnDepth", "maxAgents", "maxTokens", "maxCostUsd"]),
      remaining: z.number(),
      childAgentId: z.string().optional(),
    }),
  ),
  /** New spend caps set by the operator (`POST /agents/:agentId/budget`); null: no cap. */
  event("budget_changed", AgentId, z.object({ maxTokens: z.number().nullable(), maxCostUsd: z.number().nullable() })),
  /** One model call through the gateway, counted when it ended. */
  event(
    "model_usage",
    AgentId,
    z.object({
      callId: z.string(),
      provider: z.string(),
      model: z.string(),
      inputTokens: z.number(),
      outputTokens: z.number(),
      cacheReadTokens: z.number(),
      cacheWriteTokens: z.number(),
      costUsd: z.number(),
      durationMs: z.number(),
      /** Absent in ledgers older than it. */
      heldMs: z.number().optional(),
      usageKnown: z.boolean(),
    }),
  ),
  /**
   * The agent's harness was ended while it idled (hibernation): its files and session are kept,
   * and the next prompt or steer starts it again. `sessionStats` are its session's last ones.
   */
  event("agent_hibernated", AgentId, z.object({ sessionStats: z.record(z.string(), z.unknown()).nullable() })),
  /** A hibernated agent's harness was started again (a prompt or steer came). */
  event("agent_woke", AgentId, z.object({})),
  /**
   * A tool call of the agent that swarmd itself refused or could not carry out (a host call, a
   * spawn, an approval, a model call through the gateway), never a command's own failure. `count`
   * is more than 1 when a burst faster than the ledger takes them was written as one event
   * (`tool`, `code` and `message` are then the burst's last).
   */
  event(
    "tool_refused",
    AgentId,
    z.object({ tool: z.string(), code: z.string(), message: z.string(), count: z.number().int().min(1) }),
  ),
  /** A harness event of the §6.2 list: the harness's (capped) data plus its `hseq` and time. */
  z.object({
    type: z.enum(HARNESS_RECORDED_EVENT_NAMES),
    agentId: AgentId,
    data: z.looseObject({ hseq: z.number().int(), harnessAt: z.number() }),
  }),
]);

/** What `tool_refused` says of one refusal (its `count` is the writer's). */
export type ToolRefusal = Omit<Extract<RunEventInput, { type: "tool_refused" }>["data"], "count">;

/** An event to append (the ledger adds `seq` and `at`). */
export type RunEventInput = z.infer<typeof RunEventSchema>;

/** A persisted event as the ledger gives it back, decoded: what the run view folds. */
export type RunEvent = RunEventInput & { seq: number; at: number };

/**
 * Decode a stored event. Returns null for one that does not have the shape its type promises
 * (a ledger written by an older swarmd, say) or whose type the fold does not know: the fold skips
 * it rather than guess.
 */
export function decodeRunEvent(stored: {
  seq: number;
  at: number;
  type: string;
  agentId: string | null;
  data: unknown;
}): RunEvent | null {
  const parsed = RunEventSchema.safeParse(stored);
  return parsed.success ? { ...parsed.data, seq: stored.seq, at: stored.at } : null;
}
