import type { ScriptStep } from "../spec/agent-spec.ts";
import type { GatewayModel } from "./gateway-model.ts";

/** One model call's usage as recorded (`model_usage`), with cost from pi-ai's prices for the model. */
export interface CallUsage {
  callId: string;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  durationMs: number;
  /** Time the call was held before it was sent: for its agents' budgets, the provider's pacing, and retries of a busy provider. */
  heldMs: number;
  /** False when the provider's answer carried no usage (a server that ignores `include_usage`): the counts are then 0. */
  usageKnown: boolean;
}

/**
 * Where a scripted agent is in its script, kept durably: a restart neither replays a step nor
 * skips one. `take` persists its answer before it returns (before the step's first byte is sent);
 * the same request sent again after a cut-off (the harness retrying across a daemon restart) gets
 * the same step until that step's answer was delivered (`delivered`).
 */
export interface ScriptCursor {
  take(requestHash: string): Promise<number>;
  delivered(index: number): Promise<void>;
}

/** The agent behind one gateway socket, as the gateway needs it. */
export interface ModelCaller {
  agentId: string;
  /** The model its spec names (for a script, `SCRIPTED_MODEL`). */
  model: GatewayModel;
  script?: readonly ScriptStep[];
  cursor: ScriptCursor;
  /** Resolves once the agent's and its ancestors' spend budgets let a call go (it may pause a subtree meanwhile). */
  admit(signal: AbortSignal): Promise<void>;
  /** The gateway started (`true`) or stopped (`false`) holding one of the agent's calls: paused time for the quiet-turn limit. */
  holding(on: boolean): void;
  /** Make a finished call's usage durable; awaited before the call's last byte reaches the agent. */
  record(usage: CallUsage): Promise<void>;
  /** The gateway refused the call or could not carry it out (its own answer, not a provider's): recorded for the agent; must not throw. */
  refused(message: string): void;
  /** Resolves while the agent is not paused: a scripted answer is paced only while its agent runs. */
  whenRunning(signal: AbortSignal): Promise<void>;
}
