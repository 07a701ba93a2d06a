import type { Delivery, MemberResult, Outcome, PausedBy } from "../src/swarm-api.ts";

export type { Delivery, PausedBy };
/** Why a member of a control request ended up as it did. */
export type ControlOutcome = MemberResult["outcome"];
export type ControlOp = "pause" | "resume" | "stop" | "steer";
export type EndOutcome = Outcome;
export type TurnOutcome = "success" | "failed" | "aborted";

/**
 * Where an agent actor starts: fresh (`spawning`/`provisioning`) or restored live after a restart.
 * Ended agents get no actor.
 */
export type StartState = "spawning" | "provisioning" | "running" | "paused";

export interface AgentInput {
  agentId: string;
  runId: string;
  /** Chosen before provisioning so a crash mid-provision can be reconciled by id. */
  sandboxId: string;
  start: StartState;
  /** Prompt to run once the sandbox is ready (the spawn's or the run's first turn). */
  prompt?: string;
  keepAlive: boolean;
  /** Quiet-turn limit in ms of unpaused time. */
  turnMaxMs: number;
  /** Set when a subtree pause reached the agent before its sandbox was forked. */
  pendingPause?: PausedBy;
  /** Restore only: pausedBy of a paused agent, live children and turns already run. */
  pausedBy?: PausedBy;
  liveChildren?: number;
  turns?: number;
  /** Restore only: turns the harness accepted and has not yet settled (as the ledger knows it). */
  inflight?: number;
}

/**
 * Facts the machine states; the actors layer turns each into a ledger event (in emit order).
 * `settled` is a turn's result; `ended` the agent's end.
 */
export type Fact =
  | { kind: "state"; from: string; to: string; reason: string }
  | { kind: "provisioned"; sandboxId: string }
  | { kind: "steered"; message: string }
  /** `hseq` of the harness event that settled the turn, recorded so a replay never settles it twice. */
  | { kind: "settled"; outcome: TurnOutcome; text: string | null; hseq: number }
  | { kind: "ended"; outcome: EndOutcome; error?: string };

/** Commands the machine sends to its `harness` actor. */
export type HarnessCommandEvent =
  | { type: "harness.prompt"; text: string }
  | { type: "harness.steer"; message: string; requestId: string }
  | { type: "harness.abort" };

/** What the harness actor reports back. */
export type HarnessReportEvent =
  | { type: "harness.activity" }
  | { type: "harness.settled"; outcome: TurnOutcome; text: string | null; error?: string; hseq: number }
  /** Answer to `harness.steer`; `idle` when the harness had no running turn to take it. */
  | { type: "harness.steered"; requestId: string; message: string; ok: boolean; idle?: boolean; error?: string }
  | { type: "harness.lost"; error: string };

/** Control requests; every one is answered with exactly one `member.reply` to the parent. */
export type ControlEvent =
  | { type: "control.pause"; requestId: string; by: PausedBy }
  | { type: "control.resume"; requestId: string }
  | { type: "control.stop"; requestId: string }
  | { type: "control.steer"; requestId: string; message: string };

export type AgentEvent =
  | ControlEvent
  | HarnessReportEvent
  | { type: "deps.settled" }
  | { type: "prompt"; text: string }
  | { type: "child.spawned" }
  | { type: "child.ended" };

export interface MemberReply {
  type: "member.reply";
  requestId: string;
  agentId: string;
  outcome: ControlOutcome;
  error?: string;
  delivery?: Delivery;
}

export type AgentEmitted = { type: "fact"; agentId: string; fact: Fact };

export interface ProvisionInput {
  agentId: string;
  runId: string;
  sandboxId: string;
}

export interface HarnessActorInput {
  agentId: string;
  runId: string;
  sandboxId: string;
}

export interface SandboxActorInput {
  agentId: string;
  sandboxId: string;
}

/** Closing a sandbox because the agent ends: how it ends, recorded before the sandbox goes. */
export interface CloseInput extends SandboxActorInput {
  ending: { outcome: EndOutcome; error?: string };
}
