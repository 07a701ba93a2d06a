/**
 * The install's `postinstall` (scripts/patch-packages.mjs) changes tsx and xstate in place. These
 * tests fail when a patch is not in every build of its package (a release that moved the text), and
 * check that XState behaves as documented where its patch reuses what it computed before: state
 * values and tags, history, eventless transitions, stopped children and transitions per event.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { assign, createActor, fromCallback, setup } from "xstate";

interface PatchReport {
  package: string;
  edits: { applied: number; already: number }[];
}

describe("the install's patches of tsx and xstate", () => {
  it("are in place in every build file they are meant for", () => {
    const script = join(import.meta.dirname, "../../scripts/patch-packages.mjs");
    const report: PatchReport[] = JSON.parse(execFileSync(process.execPath, [script, "--check"], { encoding: "utf8" }));
    assert.deepEqual(
      report.map((r) => r.package),
      ["tsx", "xstate"],
    );
    for (const { package: name, edits } of report) {
      for (const [i, edit] of edits.entries()) {
        assert.equal(edit.applied, 0, `${name} edit ${i} is not applied yet`);
        assert.ok(edit.already > 0, `${name} edit ${i} is in no file`);
      }
    }
    // XState ships four builds (CommonJS and ES modules, production and development): all patched.
    const xstate = report.find((r) => r.package === "xstate")!;
    assert.deepEqual(
      xstate.edits.map((e) => e.already),
      xstate.edits.map(() => 4),
    );
  });
});

describe("XState, patched, behaves as documented", () => {
  it("a snapshot whose state nodes did not change keeps its value and tags; a transition changes them", () => {
    const machine = setup({ types: { context: {} as { n: number } } }).createMachine({
      context: { n: 0 },
      initial: "a",
      states: {
        a: { tags: ["first"], on: { inc: { actions: assign({ n: ({ context }) => context.n + 1 }) }, go: "b" } },
        b: { tags: ["second"] },
      },
    });
    const actor = createActor(machine).start();
    const before = actor.getSnapshot();
    actor.send({ type: "inc" });
    const after = actor.getSnapshot();
    assert.notEqual(after, before);
    assert.equal(after.context.n, 1);
    // The patch: the same value object and tags, not computed again.
    assert.equal(after.value, before.value);
    assert.equal(after.tags, before.tags);
    assert.ok(after.hasTag("first") && after.matches("a"));
    actor.send({ type: "go" });
    const moved = actor.getSnapshot();
    assert.equal(moved.value, "b");
    assert.deepEqual([...moved.tags], ["second"]);
    assert.ok(!moved.hasTag("first"));
    assert.deepEqual(before.value, "a");
  });

  it("shallow and deep history return to the states left", () => {
    const machine = setup({}).createMachine({
      initial: "work",
      states: {
        work: {
          initial: "edit",
          on: { away: "away" },
          states: {
            edit: { on: { next: "review" } },
            review: { initial: "read", states: { read: { on: { next: "comment" } }, comment: {} } },
            shallow: { type: "history" },
            deep: { type: "history", history: "deep" },
          },
        },
        away: { on: { backShallow: "work.shallow", backDeep: "work.deep" } },
      },
    });
    const actor = createActor(machine).start();
    for (const type of ["next", "next", "away", "backShallow"]) actor.send({ type });
    assert.deepEqual(actor.getSnapshot().value, { work: { review: "read" } });
    for (const type of ["next", "away", "backDeep"]) actor.send({ type });
    assert.deepEqual(actor.getSnapshot().value, { work: { review: "comment" } });
    for (const type of ["away", "backDeep"]) actor.send({ type });
    assert.deepEqual(actor.getSnapshot().value, { work: { review: "comment" } });
  });

  it("eventless transitions of a state and of its ancestors are taken when their guards pass", () => {
    const machine = setup({ types: { context: {} as { n: number } } }).createMachine({
      context: { n: 0 },
      initial: "counting",
      states: {
        counting: {
          always: { guard: ({ context }) => context.n >= 3, target: "done" },
          initial: "low",
          on: { inc: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
          states: { low: { always: { guard: ({ context }) => context.n >= 1, target: "high" } }, high: {} },
        },
        done: { type: "final" },
      },
    });
    const actor = createActor(machine).start();
    assert.deepEqual(actor.getSnapshot().value, { counting: "low" });
    actor.send({ type: "inc" });
    assert.deepEqual(actor.getSnapshot().value, { counting: "high" });
    actor.send({ type: "inc" });
    assert.deepEqual(actor.getSnapshot().value, { counting: "high" });
    actor.send({ type: "inc" });
    assert.equal(actor.getSnapshot().value, "done");
    assert.equal(actor.getSnapshot().status, "done");
  });

  it("a state's invoked child is stopped when the state is left; the others stay", () => {
    const stopped: string[] = [];
    const child = fromCallback<{ type: string }, { name: string }>(
      ({ input }) =>
        () =>
          stopped.push(input.name),
    );
    const machine = setup({ actors: { child } }).createMachine({
      type: "parallel",
      states: {
        one: {
          initial: "on",
          states: {
            on: { invoke: { id: "first", src: "child", input: { name: "first" } }, on: { off: "off" } },
            off: {},
          },
        },
        two: { invoke: { id: "second", src: "child", input: { name: "second" } } },
      },
    });
    const actor = createActor(machine).start();
    assert.deepEqual(Object.keys(actor.getSnapshot().children).sort(), ["first", "second"]);
    actor.send({ type: "off" });
    assert.deepEqual(Object.keys(actor.getSnapshot().children), ["second"]);
    assert.deepEqual(stopped, ["first"]);
    actor.stop();
    assert.deepEqual(stopped, ["first", "second"]);
  });

  it("each event type takes its own transitions, guards in order, and an unknown one is ignored", () => {
    const machine = setup({
      types: { context: {} as { log: string[] }, events: {} as { type: string; n?: number } },
    }).createMachine({
      context: { log: [] },
      initial: "s",
      states: {
        s: {
          on: {
            a: [
              {
                guard: ({ event }) => event.n === 1,
                actions: assign({ log: ({ context }) => [...context.log, "a1"] }),
              },
              { actions: assign({ log: ({ context }) => [...context.log, "a"] }) },
            ],
            b: { actions: assign({ log: ({ context }) => [...context.log, "b"] }) },
          },
        },
      },
    });
    const actor = createActor(machine).start();
    for (const event of [{ type: "a", n: 1 }, { type: "b" }, { type: "a" }, { type: "c" }, { type: "b" }])
      actor.send(event);
    assert.deepEqual(actor.getSnapshot().context.log, ["a1", "b", "a", "b"]);
  });
});
