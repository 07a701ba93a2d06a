import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { agentMachine } from "../../machines/agent.machine.ts";
import {
  type AgentMachine,
  agentInput,
  CONTROL_OPS,
  controlEvent,
  type Environment,
  explore,
  key,
  pathTo,
  quiescent,
  type StartSpec,
  describe as show,
  successors,
  type World,
  worldLogic,
} from "./reply-model.ts";

// The rule (agent.machine.ts): every control event an agent receives is answered with exactly one
// `member.reply` carrying its requestId, once the effect it started finishes or fails, or the agent
// is lost, in every reachable state. Checked in two steps with xstate/graph (see reply-model.ts):
//  1. every state reachable from every start input with all the environment's events, a control
//     arriving only when no earlier one waits for its answer (as run.machine sends them);
//  2. from each of those states, each control with a fresh requestId R, then every continuation of
//     follow-up events. Not a depth bound: the whole graph is explored, with the unanswered requests
//     part of each state, until R is answered and forgotten (nothing could answer it again). No
//     state may have seen a second reply, no quiescent state (no effect, no steer in flight) may
//     leave R unanswered, and from every state where R is unanswered an answer must stay reachable.

// The check takes a minute of one core for all of STARTS, so it runs as three files that
// `--test-concurrency` spreads over the cores: the starts of agents that end after their work
// (reply-rule.test.ts), those of keepAlive agents (reply-rule-kept.test.ts), and the check's own test
// (reply-check.test.ts). Every state reachable from a start is reached from one half or the other,
// so the two halves together check exactly the pairs one run over STARTS does.

export const R = "req-under-test";
/** R answered and no longer anywhere in the machine's context or in a steer the harness holds: nothing can answer it again. */
const settledFor = (w: World) =>
  !w.open.includes(R) && !w.steers.includes(R) && !JSON.stringify(w.agent.context).includes(`"${R}"`);

export const STARTS: StartSpec[] = [false, true].flatMap((keepAlive) => [
  { start: "spawning", keepAlive, prompt: "go" },
  { start: "spawning", keepAlive },
  { start: "provisioning", keepAlive, prompt: "go" },
  { start: "provisioning", keepAlive, prompt: "go", pendingPause: "cascade" },
  { start: "provisioning", keepAlive, pendingPause: "operator" },
  { start: "provisioning", keepAlive, restored: { turns: 1, inflight: 1, liveChildren: 0 } },
  { start: "provisioning", keepAlive, restored: { turns: 1, inflight: 0, liveChildren: 1 } },
  { start: "provisioning", keepAlive, restored: { pausedBy: "operator", turns: 1, inflight: 1, liveChildren: 0 } },
  { start: "provisioning", keepAlive, restored: { pausedBy: "cascade", turns: 1, inflight: 0, liveChildren: 1 } },
  { start: "provisioning", keepAlive, restored: { turns: 1, inflight: 0, liveChildren: 1, asleep: true } },
  {
    start: "provisioning",
    keepAlive,
    restored: { pausedBy: "operator", turns: 0, inflight: 0, liveChildren: 0, asleep: true },
  },
  { start: "provisioning", keepAlive, prompt: "go", again: true },
  { start: "provisioning", keepAlive, restored: { turns: 1, inflight: 1, liveChildren: 0, resend: "go" } },
  {
    start: "provisioning",
    keepAlive,
    restored: { pausedBy: "cascade", turns: 1, inflight: 1, liveChildren: 1, asleep: true, resend: "go" },
  },
  { start: "provisioning", keepAlive, ending: { outcome: "aborted", reason: "drained" } },
  { start: "provisioning", keepAlive, ending: { outcome: "success" } },
]);

export interface Report {
  /** Distinct states reached in step 1, and those of them where a control may arrive. */
  reachable: number;
  states: number;
  pairs: number;
  explored: number;
  strays: number;
  /** Every breach found, one line per state value × control × kind; `violations` details the first few with a path. */
  breaches: string[];
  violations: string[];
}

export function checkReplyRule(
  machine: AgentMachine,
  starts: StartSpec[],
  discipline: Environment["discipline"],
  maxReported = 8,
): Report {
  const { logic, strays, initial, send } = worldLogic(machine);
  // Step 1: reachable states, each with how it was first reached (for messages).
  const reachable = new Map<string, { world: World; via: () => string[] }>();
  for (const spec of starts) {
    const first = initial(agentInput(spec));
    const known = new Set(reachable.keys()); // reached from an earlier start: its successors are known too
    const adj = explore(logic, first, { discipline, events: "all" }, (w) => known.has(key(w)));
    for (const [k, { state }] of Object.entries(adj)) {
      if (!reachable.has(k))
        reachable.set(k, { world: state, via: () => [`start ${JSON.stringify(spec)}`, ...pathTo(adj, key(first), k)] });
    }
  }
  // Step 2: each control from each state where the environment may send one.
  const report: Report = {
    reachable: reachable.size,
    states: 0,
    pairs: 0,
    explored: 0,
    strays: 0,
    breaches: [],
    violations: [],
  };
  for (const { world, via } of reachable.values()) {
    if (world.problems.length > 0 || (discipline === "supervisor" && world.open.length > 0)) continue;
    report.states++;
    for (const op of CONTROL_OPS) {
      report.pairs++;
      const control = controlEvent(op, R);
      const sent = send(world, control);
      const adj = explore(logic, sent, { discipline, events: "follow-ups" }, settledFor);
      const nodes = Object.entries(adj);
      report.explored += nodes.length;
      const answerable = canStillAnswer(adj);
      // The worst breach for this pair: a problem (second reply, …), then R left unanswered with
      // nothing in flight, then R unanswerable although something is in flight. BFS order: shortest first.
      let worst: { rank: number; k: string; end: World; problem: string } | undefined;
      for (const [k, { state }] of nodes) {
        const unanswered = state.open.includes(R);
        const found: [number, string] | undefined =
          state.problems[0] !== undefined
            ? [0, state.problems[0]]
            : unanswered && quiescent(state)
              ? [1, `"${R}" is never answered (nothing left in flight)`]
              : unanswered && !answerable.has(k)
                ? [2, `"${R}" can no longer be answered`]
                : undefined;
        if (found && (!worst || found[0] < worst.rank)) worst = { rank: found[0], k, end: state, problem: found[1] };
      }
      if (!worst) continue;
      const what = `${JSON.stringify(world.agent.value)} + ${show(control)} ⇒ ${worst.problem}`;
      if (report.breaches.includes(what)) continue;
      report.breaches.push(what);
      if (report.violations.length < maxReported) {
        const path = [
          ...via(),
          `[${JSON.stringify(world.agent.value)}] ${show(control)}`,
          ...pathTo(adj, key(sent), worst.k),
          `[${JSON.stringify(worst.end.agent.value)}]`,
        ];
        report.violations.push(`${what}\n    ${path.join("\n    ")}`);
      }
    }
  }
  report.strays = strays.size;
  if (report.breaches.length > report.violations.length)
    report.violations.push(`… and ${report.breaches.length - report.violations.length} more`);
  return report;
}

/** Keys of states from which some continuation answers R (backwards from the states where it is answered). */
function canStillAnswer(adj: ReturnType<typeof explore>): Set<string> {
  const into = new Map<string, string[]>();
  const good: string[] = [];
  for (const [k, { state }] of Object.entries(adj)) {
    if (!state.open.includes(R) && state.problems.length === 0) good.push(k);
    for (const { state: next } of successors(adj, k)) {
      const nk = key(next);
      into.set(nk, [...(into.get(nk) ?? []), k]);
    }
  }
  const ok = new Set(good);
  for (let k = good.pop(); k !== undefined; k = good.pop()) {
    for (const prev of into.get(k) ?? []) {
      if (ok.has(prev)) continue;
      ok.add(prev);
      good.push(prev);
    }
  }
  return ok;
}

/** The rule on the real agent machine from `starts`: one diagnostic line of what was explored, and a failure naming each breach. */
export function assertReplyRule(t: TestContext, starts: StartSpec[]): void {
  const started = Date.now();
  const report = checkReplyRule(agentMachine, starts, "supervisor");
  t.diagnostic(
    `${report.reachable} reachable states from ${starts.length} start inputs; ${report.states} of them can receive a control (one at a time) × ` +
      `${CONTROL_OPS.length} controls = ${report.pairs} control×state pairs; ` +
      `${report.explored} continuation states checked in ${Date.now() - started} ms; ${report.strays} transitions sent a member.reply with an empty requestId`,
  );
  if (report.violations.length > 0) assert.fail(`the reply rule breaks:\n${report.violations.join("\n")}`);
}
