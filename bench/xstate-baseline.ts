import { type AnyActorRef, createActor, createMachine, enqueueActions, setup } from "xstate";
import { since } from "./stats.ts";

/** One agent as bare XState sees it: running ⇄ paused, then stopped. Nothing else happens. */
const trivial = createMachine({
  id: "trivial",
  initial: "running",
  states: {
    running: { on: { pause: "paused", stop: "stopped" } },
    paused: { on: { resume: "running", stop: "stopped" } },
    stopped: { type: "final" },
  },
});

/** The same agents as children of one parent actor, as swarmd's run supervisor holds its agents. */
const parent = setup({ types: { events: {} as { type: "add"; id: string } }, actors: { trivial } }).createMachine({
  on: {
    add: { actions: enqueueActions(({ event, enqueue }) => enqueue.spawnChild("trivial", { id: event.id })) },
  },
});

export interface XStateTimings {
  createMs: number;
  pauseMs: number;
  resumeMs: number;
  stopMs: number;
}

/**
 * Create and start `n` actors of a trivial machine, then send each a pause, a resume and a stop,
 * timing each round: the floor under swarmd's control plane, which runs one machine per agent.
 * `children`: spawned by one parent actor instead of as independent root actors.
 */
export function timeBareXState(n: number, children: boolean): XStateTimings {
  let start = performance.now();
  let actors: AnyActorRef[];
  if (children) {
    const root = createActor(parent).start();
    for (let i = 0; i < n; i++) root.send({ type: "add", id: `a${i}` });
    actors = Object.values(root.getSnapshot().children as Record<string, AnyActorRef>);
  } else {
    actors = Array.from({ length: n }, () => createActor(trivial).start());
  }
  const createMs = since(start);
  const round = (type: string) => {
    start = performance.now();
    for (const actor of actors) actor.send({ type });
    return since(start);
  };
  const pauseMs = round("pause");
  const resumeMs = round("resume");
  const stopMs = round("stop");
  const stopped = actors.filter((a) => a.getSnapshot().status === "done").length;
  if (stopped !== n) throw new Error(`only ${stopped} of ${n} bare actors stopped`);
  return { createMs, pauseMs, resumeMs, stopMs };
}
