import type { Delivery, EndReason, LiveState, MemberResult, Outcome, PausedBy } from "../src/swarm-api.ts";

export type { Delivery, EndReason, PausedBy };
/** Why a member of a control request ended up as it did. */
export type ControlOutcome = MemberResult["outcome"];
export type ControlOp = "pause" | "resume" | "stop" | "steer";
export type EndOutcome = Outcome;
export type TurnOutcome = "success" | "failed" | "aborted";

/**
 * Tags of the machine's states: what every decision about an agent reads (with `hasTag`). Exactly
 * one of the statuses (`spawning` … `aborted`) is on at any time; `live` covers running and paused.
 */
export type AgentTag = "spawning" | "provisioning" | "live" | "running" | "paused" | "ending" | "done" | "aborted";

/** Where a new agent's actor starts: waiting for `waitFor` (`spawning`) or making its sandbox. */
export type StartState = "spawning" | "provisioning";

/**
 * A live agent given its actor back after a restart, as the ledger left it. Ended agents get no
 * actor; agents caught before their sandbox existed start again as new ones.
 */
export interface RestoredLive {
  /** Who paused it, when it was paused. */
  pausedBy: PausedBy | null;
  /** Turns run so far. */
  turns: number;
  /** Turns the harness accepted and has not yet settled. */
  inflight: number;
  /** Children still live. */
  liveChildren: number;
  /** The drain that reached it before the restart, if one did. */
  draining?: Drain | null;
  /** Its approval requests still waiting for a decision (each holds the quiet-turn clock). */
  approvals?: number;
}

/**
 * A drain as one agent keeps it: a subtree drain also waits for the agent's children to end.
 * `deadline` (epoch ms) is when the run aborts what is still live; the machine does not use it.
 */
export interface Drain {
  subtree: boolean;
  deadline: number;
}

interface AgentInputBase {
  agentId: string;
  runId: string;
  /** Chosen before provisioning so a crash mid-provision can be reconciled by id. */
  sandboxId: string;
  /** Prompt to run once the sandbox is ready (the spawn's or the run's first turn). */
  prompt?: string;
  keepAlive: boolean;
  /** Quiet-turn limit in ms of unpaused time. */
  turnMaxMs: number;
  /** Set when a subtree pause reached the agent before its sandbox was forked. */
  pendingPause?: PausedBy;
}

/**
 * A new agent starts at `start`; an agent the ledger shows live after a restart is `restored` and
 * goes straight back to `running` or `paused`. Both come from one place (`Run.addAgent`).
 */
export type AgentInput = AgentInputBase &
  ({ start: StartState; restored?: undefined } | { start?: undefined; restored: RestoredLive });

/**
 * Facts the machine states; the actors layer turns each into a ledger event (in emit order).
 * `settled` is a turn's result; `ended` the agent's end.
 */
export type Fact =
  | { kind: "state"; from: string; to: LiveState; reason: string }
  | { kind: "provisioned"; sandboxId: string }
  | { kind: "steered"; message: string }
  /** `hseq` of the harness event that settled the turn, recorded so a replay never settles it twice. */
  | { kind: "settled"; outcome: TurnOutcome; text: string | null; hseq: number }
  | { kind: "ended"; outcome: EndOutcome; error?: string; reason?: EndReason };

/** Commands the machine sends to its `harness` actor. */
export type HarnessCommandEvent =
  | { type: "harness.prompt"; text: string }
  | { type: "harness.steer"; message: string; requestId: string }
  | { type: "harness.abort" }
  /**
   * The agent is idle between turns: the harness actor hibernates the harness once this has lasted
   * SWARM_HIBERNATE_AFTER_MS with no command in between (and the agent is not paused).
   */
  | { type: "harness.idle" };

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
  /** `reason`: why it is stopped, when not the operator's abort (a drain past its deadline). */
  | { type: "control.stop"; requestId: string; reason?: EndReason }
  | { type: "control.steer"; requestId: string; message: string };

export type AgentEvent =
  | ControlEvent
  | HarnessReportEvent
  | { type: "deps.settled" }
  | { type: "prompt"; text: string }
  | { type: "child.spawned" }
  | { type: "child.ended" }
  /** The model gateway started or stopped holding one of the agent's calls (a spend budget, a provider's pacing). */
  | { type: "gateway.hold" }
  | { type: "gateway.release" }
  /** An approval request of the agent waits for a decision, or got one: waiting is paused time for the quiet-turn limit. */
  | { type: "approval.hold" }
  | { type: "approval.release" }
  /**
   * A drain reached the agent: it ends once its turns (and, for a subtree drain, its children)
   * are done; one not yet started ends at once. No reply: the run answers for it.
   */
  | { type: "drain"; drain: Drain };

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
  ending: Ending;
}

/** How an agent ends: recorded before its sandbox closes, so a restart can finish the end. */
export interface Ending {
  outcome: EndOutcome;
  error?: string;
  reason?: EndReason;
}
