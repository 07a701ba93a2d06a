import type { AgentInput, ControlOutcome, Delivery, Drain, Ending, EndReason, PausedBy } from "./agent.types.ts";

/** What one agent's machine remembers between events. */
export interface AgentContext {
  /** Where it began: fresh (`spawning`/`provisioning`) or `live` again after a restart. */
  start: "spawning" | "provisioning" | "live";
  agentId: string;
  runId: string;
  sandboxId: string;
  keepAlive: boolean;
  turnMaxMs: number;
  /** Prompts waiting for a running harness (initial prompt, prompts while paused, steers to idle agents). */
  prompts: string[];
  /** Steer messages accepted while paused, delivered on resume. */
  steers: string[];
  /** Turns handed to the harness and not yet settled. */
  inflight: number;
  turns: number;
  liveChildren: number;
  pausedBy: PausedBy | null;
  pendingPause: PausedBy | null;
  /** The control request an effect state answers when it finishes. */
  request: { requestId: string; by: PausedBy } | null;
  /** Steers handed to the harness whose answers have not come back: the agent may not finish before they do. */
  steering: string[];
  /** A resume that arrived while the agent was freezing on its own (joining a subtree pause): run once frozen. */
  resumeAfterPause: string | null;
  quietAbort: boolean;
  /** Model calls the gateway holds for the agent now: held time is paused time for the quiet-turn limit. */
  gatewayHolds: number;
  /** Approval requests waiting for a decision: that time is paused time for the quiet-turn limit too. */
  approvalHolds: number;
  /** Set once a drain reached the agent (never cleared: a drain ends the agent). */
  draining: Drain | null;
  /** Why a stop under way stops it, when not the operator's abort. */
  stopReason: EndReason | null;
  failure: string | null;
  end: Ending;
}

/** Parameters of the `reply` action: one member's answer to one control request. */
export interface ReplyParams {
  requestId: string;
  outcome: ControlOutcome;
  error?: string;
  delivery?: Delivery;
}

export function initialContext(input: AgentInput): AgentContext {
  const restored = input.restored;
  return {
    start: input.restored ? "live" : input.start,
    agentId: input.agentId,
    runId: input.runId,
    sandboxId: input.sandboxId,
    keepAlive: input.keepAlive,
    turnMaxMs: input.turnMaxMs,
    prompts: input.prompt === undefined ? [] : [input.prompt],
    steers: [],
    inflight: restored?.inflight ?? 0,
    turns: restored?.turns ?? 0,
    liveChildren: restored?.liveChildren ?? 0,
    pausedBy: restored?.pausedBy ?? null,
    pendingPause: input.pendingPause ?? null,
    request: null,
    steering: [],
    resumeAfterPause: null,
    quietAbort: false,
    gatewayHolds: 0,
    approvalHolds: restored?.approvals ?? 0,
    draining: restored?.draining ?? null,
    stopReason: null,
    failure: null,
    end: { outcome: "success" },
  };
}
