import type { AgentInput, ControlOutcome, Delivery, Drain, Ending, EndReason, PausedBy } from "./agent.types.ts";

/**
 * What one agent's machine remembers between events: every live fact about the agent has its home
 * here. At most 19 top-level keys: XState copies the context with `Object.assign({}, context, …)`
 * on every `assign`, and V8 turns a copy of more than 19 keys into a dictionary-mode object, which
 * made each assign of a 27-key context cost ~8 µs and every read a hash lookup (a pause, resume or
 * stop of 10,000 agents spent 15 % of its CPU there). So what never changes sits in `input`, and
 * what stops the quiet-turn clock in `holds`.
 */
export interface AgentContext {
  /** What it was started with, never changed: ids, options, and where it began (`start`, used to pick the first state). */
  input: AgentIdentity;
  /** Prompts waiting for a running harness (initial prompt, prompts while paused or asleep, steers to idle agents). */
  prompts: string[];
  /** Steer messages accepted while paused, delivered on resume. */
  steers: string[];
  /** Turns handed to the harness and not yet settled. */
  inflight: number;
  turns: number;
  /** A restored agent's spawn prompt its harness may never have got (`RestoredLive.resend`), until handed over. */
  resend: string | null;
  liveChildren: number;
  pausedBy: PausedBy | null;
  pendingPause: PausedBy | null;
  /** The control request an effect state answers when it finishes (or one deferred until a wake or a reattach ends). */
  request: { requestId: string; by: PausedBy } | null;
  /** Steers handed to the harness whose answers have not come back: the agent may not finish before they do. */
  steering: string[];
  /** A resume that arrived while the agent was freezing on its own (joining a subtree pause): run once frozen. */
  resumeAfterPause: string | null;
  quietAbort: boolean;
  holds: Holds;
  /** Set once a drain reached the agent (never cleared: a drain ends the agent). */
  draining: Drain | null;
  /** Its harness hibernates: ended, its session and files kept, started again by the next command. Kept across a pause. */
  asleep: boolean;
  /** Why a stop under way stops it, when not the operator's abort. */
  stopReason: EndReason | null;
  failure: string | null;
  end: Ending;
}

/** The agent's input less its one-off fields (the first prompt, a pending pause: their home is the context). */
export type AgentIdentity = Omit<AgentInput, "prompt" | "pendingPause">;

/** What stops the quiet-turn clock: while any holds, time is paused time for the quiet-turn limit. */
export interface Holds {
  /** Model calls the gateway holds for the agent now. */
  gateway: number;
  /** Approval requests waiting for a decision. */
  approvals: number;
  /** swarmd cannot reach the engine of its sandbox's node (cluster runtime). */
  unreachable: boolean;
}

/** Parameters of the `reply` action: one member's answer to one control request. */
export interface ReplyParams {
  requestId: string;
  outcome: ControlOutcome;
  error?: string;
  delivery?: Delivery;
}

export function initialContext(input: AgentInput): AgentContext {
  const restored = input.start.state === "live" ? input.start.restored : undefined;
  const { prompt, pendingPause, ...identity } = input;
  return {
    input: identity,
    prompts: prompt === undefined ? [] : [prompt],
    steers: [],
    inflight: restored?.inflight ?? 0,
    turns: restored?.turns ?? 0,
    resend: restored?.resend ?? null,
    liveChildren: restored?.liveChildren ?? 0,
    pausedBy: restored?.pausedBy ?? null,
    pendingPause: pendingPause ?? null,
    request: null,
    steering: [],
    resumeAfterPause: null,
    quietAbort: false,
    holds: { gateway: 0, approvals: restored?.approvals ?? 0, unreachable: false },
    draining: restored?.draining ?? null,
    asleep: restored?.asleep ?? false,
    stopReason: null,
    failure: null,
    end: input.start.state === "ending" ? input.start.ending : { outcome: "success" },
  };
}
