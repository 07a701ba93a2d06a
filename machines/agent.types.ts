import type { Delivery, EndReason, LiveState, MemberResult, Outcome, PausedBy } from "../src/swarm-api.ts";

export type { Delivery, EndReason, PausedBy };
/** Why a member of a control request ended up as it did. */
export type ControlOutcome = MemberResult["outcome"];
export type ControlOp = "pause" | "resume" | "stop" | "steer";
export type EndOutcome = Outcome;
export type TurnOutcome = "success" | "failed" | "aborted";

/**
 * Tags of the machine's states: what every decision about an agent reads (with `hasTag`). Exactly
 * one of the statuses (`spawning` … `aborted`) is on at any time; `live` covers running and paused;
 * `asleep` marks a running agent whose harness hibernates.
 */
export type AgentTag =
  | "spawning"
  | "provisioning"
  | "live"
  | "running"
  | "paused"
  | "ending"
  | "done"
  | "aborted"
  | "asleep";

/**
 * A live agent given its actor back after a restart, as the ledger left it (the fold of its events
 * and index keys: `restoredStarts` in actors/run/restore.ts).
 */
export interface RestoredLive {
  /** Who paused it, when it was paused. */
  pausedBy: PausedBy | null;
  /** Turns run so far. */
  turns: number;
  /** Turns the harness accepted and has not yet settled. */
  inflight: number;
  /** Children that have an actor and have not ended. */
  liveChildren: number;
  /** The drain that reached it before the restart, if one did. */
  draining: Drain | null;
  /** Its approval requests still waiting for a decision (each holds the quiet-turn clock). */
  approvals: number;
  /** Its harness hibernated (`agent_hibernated` with no `agent_woke` after it). */
  asleep: boolean;
  /**
   * Its spawn prompt, when nothing in the ledger shows its harness took it (`restoredTurns`): its
   * turn is counted as owed, and the prompt is handed over again unless the harness's own log shows
   * it was taken.
   */
  resend?: string | null;
  /**
   * The harness's progress as the ledger's index had it when the restart read it (`hseq!`,
   * `prompts!`): where its harness actor takes up. Absent: the actor reads them itself.
   */
  recorded?: RecordedHarness;
}

/** An agent's harness as the ledger records it: the newest harness event handled, the prompts it took. */
export interface RecordedHarness {
  hseq: number;
  prompts: number;
}

/**
 * Where an agent's actor begins. A spawn starts it `spawning` (waiting for `waitFor`) or
 * `provisioning`; a restart starts every agent the ledger shows unended from where the ledger left
 * it: before its sandbox existed (`again`: a sandbox half made under the same id is closed first),
 * `live` (its sandbox is reattached: the model gateway served again, the freezer matched to the
 * ledger, the harness connection opened), or `ending` (closing as recorded).
 */
export type AgentStart =
  | { state: "spawning" | "provisioning"; again?: boolean }
  | { state: "live"; restored: RestoredLive }
  | { state: "ending"; ending: Ending };

/**
 * A drain as one agent keeps it: a subtree drain also waits for the agent's children to end.
 * `deadline` (epoch ms) is when the run aborts what is still live; the machine does not use it.
 */
export interface Drain {
  subtree: boolean;
  deadline: number;
}

/** An agent's machine input: who it is, where it sits in the tree, and where it begins. */
export interface AgentInput {
  agentId: string;
  runId: string;
  /** The agent that spawned it; null for the run's root. */
  parentAgentId: string | null;
  /** Chosen before provisioning so a crash mid-provision can be reconciled by id. */
  sandboxId: string;
  /** Prompt to run once the sandbox is ready (the spawn's or the run's first turn). */
  prompt?: string;
  keepAlive: boolean;
  /** Quiet-turn limit in ms of unpaused time. */
  turnMaxMs: number;
  /** Set when a subtree pause reached the agent before its sandbox was forked. */
  pendingPause?: PausedBy;
  start: AgentStart;
}

/**
 * Facts the machine states; the actors layer turns each into a ledger event (in emit order).
 * `settled` is a turn's result; `ended` the agent's end.
 */
export type Fact =
  | { kind: "state"; from: string; to: LiveState; reason: string }
  /** `node`: where the runtime placed the sandbox (`NodeInfo.id`; `local` on single-host runtimes). */
  | { kind: "provisioned"; sandboxId: string; node: string }
  | { kind: "steered"; message: string }
  /** `hseq` of the harness event that settled the turn, recorded so a replay never settles it twice. */
  | { kind: "settled"; outcome: TurnOutcome; text: string | null; hseq: number }
  | { kind: "hibernated"; sessionStats: Record<string, unknown> | null }
  | { kind: "woke" }
  | { kind: "ended"; outcome: EndOutcome; error?: string; reason?: EndReason };

/** Commands the machine sends to its `harness` actor. */
export type HarnessCommandEvent =
  | { type: "harness.prompt"; text: string }
  | { type: "harness.steer"; message: string; requestId: string }
  | { type: "harness.abort" }
  /**
   * The agent is idle between turns: the actor reports `harness.idleElapsed` once this lasted
   * SWARM_HIBERNATE_AFTER_MS with no command in between. The timer is the actor's, not XState's
   * scheduler's, which a 10,000-agent run made slow.
   */
  | { type: "harness.idle" }
  /** Hibernate the idle harness now: answered `harness.slept`, or `harness.awake` when it declined (busy, unreachable, failed). */
  | { type: "harness.hibernate" }
  /** A command came while hibernating: give the hibernation up if it has not ended the harness yet. */
  | { type: "harness.stayAwake" }
  /** Start the hibernated harness again (through the start line) and connect: answered `harness.woke`, or `harness.lost`. */
  | { type: "harness.wake" }
  /** A pause came while waking: give the wake up if the harness has not been started yet (then `harness.slept`). */
  | { type: "harness.stayAsleep" }
  /**
   * A restored agent's spawn prompt that the ledger does not show its harness took: once the
   * harness's log is replayed, send it unless a `prompt_accepted` shows the harness has it. Its turn
   * is already counted; no answer comes back.
   */
  | { type: "harness.resend"; text: string }
  /** The agent is pausing or paused: its waiting host calls start no more (those being answered go on). No answer. */
  | { type: "harness.hold" }
  /** The agent runs again: its waiting host calls start again, in order. No answer. */
  | { type: "harness.release" };

/** What the harness actor reports back. */
export type HarnessReportEvent =
  | { type: "harness.activity" }
  | { type: "harness.settled"; outcome: TurnOutcome; text: string | null; error?: string; hseq: number }
  /** Answer to `harness.steer`; `idle` when the harness had no running turn to take it. */
  | { type: "harness.steered"; requestId: string; message: string; ok: boolean; idle?: boolean; error?: string }
  | { type: "harness.lost"; error: string }
  /** The idle timer ran out. */
  | { type: "harness.idleElapsed" }
  /** The harness is hibernated (by `harness.hibernate`, or found so on connecting after a restart), with its last session stats. */
  | { type: "harness.slept"; sessionStats: Record<string, unknown> | null }
  /** A hibernation was declined or given up: the harness runs and is connected. */
  | { type: "harness.awake" }
  /** The hibernated harness runs again and is connected. */
  | { type: "harness.woke" };

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
  /**
   * swarmd lost, or found again, the engine of the node its sandbox runs on (cluster runtime): its
   * quiet-turn clock stands still meanwhile, and a stop is answered at once.
   */
  | { type: "node.unreachable" }
  | { type: "node.reachable" }
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
  /** Provisioned again after a restart: a sandbox half made under this id is closed first. */
  again: boolean;
}

/** What a provision made: the node its sandbox runs on. */
export interface ProvisionOutput {
  node: string;
}

/** Reattaching a sandbox after a restart: its gateway served again and its freezer matched to `paused`. */
export interface ReattachInput {
  agentId: string;
  sandboxId: string;
  paused: boolean;
}

export interface HarnessActorInput {
  agentId: string;
  runId: string;
  sandboxId: string;
  /** The harness hibernates: nothing connects until `harness.wake`. */
  asleep: boolean;
  /** What the ledger records of the harness, when the machine knows it; otherwise the actor reads it. */
  recorded?: RecordedHarness;
}

export interface SandboxActorInput {
  agentId: string;
  sandboxId: string;
}

/** Closing a sandbox because the agent ends: how it ends, recorded before the sandbox goes. */
export interface CloseInput extends SandboxActorInput {
  ending: Ending;
}

/** `lost`: the sandbox's node was declared down while its stop waited for it (the end is then lost, with this error). */
export interface CloseOutput {
  lost?: string;
}

/** How an agent ends: recorded before its sandbox closes, so a restart can finish the end. */
export interface Ending {
  outcome: EndOutcome;
  error?: string;
  reason?: EndReason;
}
