import {
  type ActorLogic,
  type AnyActorScope,
  createActor,
  createEmptyActor,
  type EventObject,
  type ExecutableActionObject,
  type SnapshotFrom,
} from "xstate";
import { type AdjacencyMap, getAdjacencyMap } from "xstate/graph";
import type { agentMachine } from "../../machines/agent.machine.ts";
import type { AgentEvent, AgentInput, ControlEvent, Ending, PausedBy } from "../../machines/agent.types.ts";

/**
 * A model of one agent machine and the world around it, for xstate/graph traversal: the machine's
 * snapshot plus what its environment knows (control requests not yet answered, steers the harness
 * has not answered, delayed events scheduled) and any breach of the reply rule seen on the way.
 *
 * Transitions are pure: `machine.transition(snapshot, event, scope)` with an inert actor scope that
 * collects the actions instead of executing them (effects are created but never started, so their
 * done/error events are ours to send, in every order). Replies are counted from those collected
 * actions rather than from a real actor under a recording parent: a real actor runs its effects on
 * promises, so the order of "effect done", "harness answer" and "next control" would be up to the
 * scheduler, and an intermediate state could not be forked to try every continuation. xstate's own
 * `transition()` / `initialTransition()` do exactly this but with a scope that has no parent, so
 * every `sendParent` throws; ours gives the scope's `self` a stub parent, and a reply is a collected
 * `xstate.sendTo` action addressed to that stub carrying a `member.reply`.
 */
export type AgentMachine = typeof agentMachine;
/** The machine's own events, and the ones xstate delivers: an effect's done/error, a due timer. */
export type WorldEvent = AgentEvent | { type: `xstate.${string}`; actorId?: string; output?: unknown; error?: unknown };
type AgentSnapshot = SnapshotFrom<AgentMachine>;

export interface World {
  status: "active";
  output: undefined;
  error: undefined;
  agent: AgentSnapshot;
  /** requestIds of controls received and not yet answered (a multiset, in arrival order). */
  open: string[];
  /** requestIds of `harness.steer` commands the live harness has not answered yet. */
  steers: string[];
  /** Hibernations and wakes the harness was asked for and has not reported the end of (`harness.slept`, `.awake`, `.woke`). */
  sleeps: number;
  /** Delayed events the machine scheduled and has not cancelled, by send id. */
  timers: Record<string, WorldEvent>;
  /** Breaches of the reply rule on the way here (a second reply, a reply nobody asked for, a machine error). */
  problems: string[];
}

/** How an agent actor starts, independent of the input's shape; `agentInput` makes the machine's input of it. */
export interface StartSpec {
  start: "spawning" | "provisioning";
  keepAlive: boolean;
  prompt?: string;
  pendingPause?: PausedBy;
  /** Started again after a restart before its sandbox existed. */
  again?: boolean;
  /** A live agent given its actor back after a restart (`start` is then not used). */
  restored?: {
    pausedBy?: PausedBy;
    turns: number;
    inflight: number;
    liveChildren: number;
    asleep?: boolean;
    resend?: string;
  };
  /** An agent that was ending when the daemon stopped (`start` is then not used). */
  ending?: Ending;
}

export function agentInput(spec: StartSpec): AgentInput {
  const base = {
    agentId: "a",
    runId: "r",
    parentAgentId: null,
    sandboxId: "s",
    keepAlive: spec.keepAlive,
    turnMaxMs: 1_000,
    prompt: spec.prompt,
    pendingPause: spec.pendingPause,
  };
  if (spec.ending) return { ...base, start: { state: "ending", ending: spec.ending } };
  if (!spec.restored) return { ...base, start: { state: spec.start, again: spec.again } };
  const { pausedBy, asleep, ...counts } = spec.restored;
  return {
    ...base,
    start: {
      state: "live",
      restored: { ...counts, pausedBy: pausedBy ?? null, asleep: asleep ?? false, draining: null, approvals: 0 },
    },
  };
}

export function controlEvent(
  op: "pause" | "pause-cascade" | "resume" | "stop" | "steer",
  requestId: string,
): ControlEvent {
  switch (op) {
    case "pause":
      return { type: "control.pause", requestId, by: "operator" };
    case "pause-cascade":
      return { type: "control.pause", requestId, by: "cascade" };
    case "resume":
      return { type: "control.resume", requestId };
    case "stop":
      return { type: "control.stop", requestId };
    case "steer":
      return { type: "control.steer", requestId, message: "m" };
  }
}
export const CONTROL_OPS = ["pause", "pause-cascade", "resume", "stop", "steer"] as const;

const isControl = (event: WorldEvent): event is ControlEvent => event.type.startsWith("control.");
const isHarness = (child: unknown) => (child as { src?: unknown }).src === "harness";
/** Invoked effects in flight (provision, freeze, thaw, close, …): every child but the harness. */
export const effectIds = (w: World) =>
  Object.entries(w.agent.children)
    .filter(([, c]) => c && !isHarness(c))
    .map(([id]) => id);
const harnessUp = (w: World) => Object.values(w.agent.children).some((c) => c && isHarness(c));
/** Nothing left in flight that could still answer a request: no effect running, no steer awaiting the harness. */
export const quiescent = (w: World) => effectIds(w).length === 0 && w.steers.length === 0 && w.sleeps === 0;

/** The model as actor logic, for xstate/graph. `strays` collects transitions that sent a `member.reply` with an empty requestId. */
export function worldLogic(machine: AgentMachine) {
  const parent = createEmptyActor();
  const actions: ExecutableActionObject[] = [];
  const self = createActor(machine, { input: agentInput({ start: "spawning", keepAlive: false }), parent });
  const scope = {
    self,
    id: "",
    sessionId: "",
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: self.system,
    stopChild: () => {},
    actionExecutor: (action: ExecutableActionObject) => void actions.push(action),
  } as AnyActorScope;
  const strays = new Set<string>();

  const account = (from: World, agent: AgentSnapshot, event: WorldEvent): World => {
    const w: World = {
      ...from,
      agent,
      open: [...from.open],
      steers: [...from.steers],
      timers: { ...from.timers },
      problems: [...from.problems],
    };
    if (isControl(event)) w.open.push(event.requestId);
    const answered = event.type === "harness.steered" ? w.steers.indexOf(event.requestId) : -1;
    if (answered >= 0) w.steers.splice(answered, 1);
    const sleepReport =
      event.type === "harness.slept" || event.type === "harness.awake" || event.type === "harness.woke";
    if (sleepReport && w.sleeps > 0) w.sleeps--;
    for (const action of actions) {
      // Actions the machine asked for: sends (to the parent or the harness), delayed raises, cancels.
      const params = action.params as {
        to?: unknown;
        event?: EventObject & { requestId?: string };
        id?: string;
        delay?: unknown;
        sendId?: string;
      };
      if (action.type === "xstate.sendTo" && params.to === parent && params.event?.type === "member.reply") {
        const id = params.event.requestId ?? "";
        const at = w.open.indexOf(id);
        if (at >= 0) w.open.splice(at, 1);
        else if (id === "") strays.add(`${key(from)} --${event.type}-->`);
        else w.problems.push(`a member.reply for "${id}", which has no unanswered control`);
      } else if (action.type === "xstate.sendTo" && params.event?.type === "harness.steer") {
        w.steers.push(params.event.requestId ?? "");
      } else if (
        action.type === "xstate.sendTo" &&
        (params.event?.type === "harness.hibernate" || params.event?.type === "harness.wake")
      ) {
        w.sleeps++;
      } else if (action.type === "xstate.raise" && typeof params.delay === "number" && params.id && params.event) {
        w.timers[params.id] = params.event as WorldEvent;
      } else if (action.type === "xstate.cancel" && params.sendId) {
        delete w.timers[params.sendId];
      }
    }
    // A harness that is gone answers nothing more.
    if (!harnessUp(w)) {
      w.steers = [];
      w.sleeps = 0;
    }
    if (agent.status !== "active") w.problems.push(`machine ${agent.status}: ${String(agent.error)}`);
    return w;
  };

  const logic: ActorLogic<World, WorldEvent, AgentInput> = {
    transition: (from, event) => {
      if (from.problems.length > 0) return from;
      actions.length = 0;
      return account(from, machine.transition(from.agent, event as AgentEvent, scope), event);
    },
    getInitialSnapshot: (_, input) => {
      actions.length = 0;
      const agent = machine.getInitialSnapshot(scope, input);
      return account(
        {
          status: "active",
          output: undefined,
          error: undefined,
          agent,
          open: [],
          steers: [],
          sleeps: 0,
          timers: {},
          problems: [],
        },
        agent,
        { type: "xstate.init" },
      );
    },
    getPersistedSnapshot: (w) => w,
  };
  return {
    logic,
    strays,
    initial: (input: AgentInput) => logic.getInitialSnapshot(scope, input),
    send: (w: World, event: WorldEvent) => logic.transition(w, event, scope),
  };
}

/**
 * Serialized state: value, the context that can matter for a reply, effects and harness present, and
 * the environment's view. Context fields are kept verbatim (so a field added later counts) except
 * those coarsened to what the machine tests of them: texts to how many (`prompts`, `steers`),
 * `failure` to whether there is one, `turns` to whether there was one, counters capped; `start`
 * (used once, to pick the first state), `quietAbort` and the ending's error text are dropped. States
 * that differ only in what is dropped are merged, which keeps the graph finite and small.
 */
export function key(w: World): string {
  let k = keys.get(w);
  if (k === undefined) {
    k = serialize(w);
    keys.set(w, k);
  }
  return k;
}
const keys = new WeakMap<World, string>();

function serialize(w: World): string {
  const c = w.agent.context;
  // Closing or closed, an agent answers every control from its state alone (`noop`, or the request
  // its close answers): what else it remembered cannot change a reply, so those states merge.
  if (w.agent.hasTag("ending") || w.agent.hasTag("done") || w.agent.hasTag("aborted")) {
    return JSON.stringify([
      w.agent.value,
      c.request,
      c.resumeAfterPause,
      Object.keys(w.agent.children).sort(),
      w.open,
      [...w.steers].sort(),
      Object.keys(w.timers).sort(),
      w.problems,
    ]);
  }
  const { input: _input, quietAbort: _quietAbort, ...rest } = c;
  const ctx = {
    ...rest,
    prompts: Math.min(c.prompts.length, 1),
    steers: Math.min(c.steers.length, 1),
    inflight: Math.min(c.inflight, 2),
    turns: c.turns > 0,
    liveChildren: Math.min(c.liveChildren, 1),
    failure: c.failure !== null,
    end: c.end.outcome,
  };
  const children = Object.entries(w.agent.children)
    .map(([id, child]) => `${id}:${String((child as { src?: unknown }).src)}`)
    .sort();
  return JSON.stringify([
    w.agent.value,
    ctx,
    children,
    w.open,
    [...w.steers].sort(),
    Math.min(w.sleeps, 1),
    Object.keys(w.timers).sort(),
    w.problems,
  ]);
}

const EFFECT_FAILED = new Error("effect failed");

/**
 * What the environment may do. `discipline`: `supervisor` sends a control only when every earlier
 * one is answered (as run.machine does); `any` at any time. `all` events (to reach every state) or
 * only the `follow-ups` that bear on a request in flight: effects finishing or failing, due timers,
 * the harness settling a turn, answering a steer or being lost, and further controls.
 */
export interface Environment {
  discipline: "supervisor" | "any";
  events: "all" | "follow-ups";
}

/**
 * Events the environment can send in `w`: harness reports while a harness is up (settled only with a
 * turn in flight, steer answers only to steers it was given), done/error of each effect in flight,
 * due timers, then (`all`) `deps.settled`, activity, prompts and children, and controls, within
 * small bounds so the graph stays finite. A control of op `op` carries requestId `x-<op>`.
 */
export function events(w: World, env: Environment): WorldEvent[] {
  const ctx = w.agent.context;
  const out: WorldEvent[] = [];
  if (harnessUp(w)) {
    out.push({ type: "harness.lost", error: "socket closed" });
    // Hibernation's reports: the idle timer; the end of a hibernation or wake the harness was asked
    // for (slept, awake, woke, in any order); and, unasked, a harness found asleep on connecting
    // after a restart (while the agent is reattached: the only time it can happen).
    out.push({ type: "harness.idleElapsed" });
    if (w.sleeps > 0)
      out.push({ type: "harness.slept", sessionStats: null }, { type: "harness.awake" }, { type: "harness.woke" });
    else if (env.events === "all" && w.agent.matches({ live: "reattaching" }))
      out.push({ type: "harness.slept", sessionStats: null });
    if (ctx.inflight > 0) {
      out.push(
        { type: "harness.settled", outcome: "success", text: "ok", hseq: 1 },
        { type: "harness.settled", outcome: "failed", text: null, error: "model exploded", hseq: 1 },
        { type: "harness.settled", outcome: "aborted", text: "partial", hseq: 1 },
      );
    }
    for (const requestId of new Set(w.steers)) {
      out.push(
        { type: "harness.steered", requestId, message: "m", ok: true },
        { type: "harness.steered", requestId, message: "m", ok: false, idle: true, error: "no turn is running" },
        { type: "harness.steered", requestId, message: "m", ok: false, error: "harness refused" },
      );
    }
  }
  for (const id of effectIds(w)) {
    out.push(
      { type: `xstate.done.actor.${id}`, actorId: id, output: undefined },
      { type: `xstate.error.actor.${id}`, actorId: id, error: EFFECT_FAILED },
    );
  }
  out.push(...Object.values(w.timers));
  const room = ctx.inflight + ctx.prompts.length + ctx.steers.length + w.steers.length < 2;
  if (env.events === "all") {
    out.push({ type: "deps.settled" });
    if (harnessUp(w)) out.push({ type: "harness.activity" });
    if (room) out.push({ type: "prompt", text: "more" });
    out.push(ctx.liveChildren < 1 ? { type: "child.spawned" } : { type: "child.ended" });
    // A drain (once, of either scope) and an approval waiting or answered: each can come in any state.
    if (ctx.draining === null)
      out.push(
        { type: "drain", drain: { subtree: false, deadline: 1 } },
        { type: "drain", drain: { subtree: true, deadline: 1 } },
      );
    out.push(ctx.holds.approvals < 1 ? { type: "approval.hold" } : { type: "approval.release" });
  }
  if (env.discipline === "any" || w.open.length === 0) {
    // `any`: a control may come while others wait, but not one of the same op (keeps the graph finite).
    for (const op of CONTROL_OPS)
      if ((op !== "steer" || room) && !w.open.includes(`x-${op}`)) out.push(controlEvent(op, `x-${op}`));
  }
  return out;
}

/** Every state reachable from `from`; a state with a problem, or where `stop` holds, is not followed further. */
export function explore(
  logic: ActorLogic<World, WorldEvent, AgentInput>,
  from: World,
  env: Environment,
  stop = (_: World) => false,
): AdjacencyMap<World, WorldEvent> {
  return getAdjacencyMap(logic, {
    fromState: from,
    events: (w) => events(w, env),
    // An event the state takes no transition for changes nothing: skipped, except controls (each must be answered).
    filterEvents: (w, event) => isControl(event) || w.agent.can(event as AgentEvent),
    serializeState: key,
    stopWhen: (w) => w.problems.length > 0 || stop(w),
  });
}

/** The transitions out of the state serialized as `k` in `adj` (its keys are branded strings). */
export function successors(
  adj: AdjacencyMap<World, WorldEvent>,
  k: string,
): Array<{ event: WorldEvent; state: World }> {
  const node = (
    adj as unknown as Record<string, { transitions: Record<string, { event: WorldEvent; state: World }> } | undefined>
  )[k];
  return Object.values(node?.transitions ?? {});
}

/** The events leading from the traversal's first state to `target`, by breadth-first search over `adj`. */
export function pathTo(adj: AdjacencyMap<World, WorldEvent>, from: string, target: string): string[] {
  const back = new Map<string, [string, WorldEvent] | null>([[from, null]]);
  const queue = [from];
  for (let at = queue.shift(); at !== undefined && !back.has(target); at = queue.shift()) {
    for (const { event, state } of successors(adj, at)) {
      const next = key(state);
      if (back.has(next)) continue;
      back.set(next, [at, event]);
      queue.push(next);
    }
  }
  const steps: string[] = [];
  for (let link = back.get(target); link; link = back.get(link[0])) steps.unshift(describe(link[1]));
  return steps;
}

export function describe(event: WorldEvent): string {
  const { type, ...rest } = event as WorldEvent & Record<string, unknown>;
  const shown = Object.entries(rest)
    .filter(([k, v]) => k !== "actorId" && k !== "hseq" && v !== undefined)
    .map(([k, v]) => `${k}=${v instanceof Error ? v.message : JSON.stringify(v)}`);
  return shown.length ? `${type}(${shown.join(" ")})` : type;
}
