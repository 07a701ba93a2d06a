/**
 * The install's `postinstall` (scripts/patch-packages.mjs) changes tsx and xstate in place. These
 * tests fail when a patch is not in every build of its package (a release that moved the text),
 * check that patching is idempotent and leaves a file it cannot patch whole as shipped (a file half
 * patched could name a function it lacks), and check that XState behaves as documented where its patch reuses what it computed before: state
 * values and tags, history, eventless transitions, stopped children and transitions per event.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { assign, createActor, fromCallback, setup } from "xstate";

interface PatchReport {
  package: string;
  edits: { applied: number; already: number }[];
}

/** scripts/patch-packages.mjs, as the tests use it. */
interface PatchScript {
  PATCHES: { package: string; edits: { files: RegExp; from: string; to: string }[] }[];
  patchPackages(options: { write?: boolean; dists?: Record<string, string> }): PatchReport[];
}

const SCRIPT = join(import.meta.dirname, "../../scripts/patch-packages.mjs");
const script: PatchScript = await import(pathToFileURL(SCRIPT).href);
const dir = mkdtempSync(join(tmpdir(), "swarmd-patches-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("the install's patches of tsx and xstate", () => {
  it("are in place in every build file they are meant for", () => {
    const report: PatchReport[] = JSON.parse(execFileSync(process.execPath, [SCRIPT, "--check"], { encoding: "utf8" }));
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

describe("patching a build file", () => {
  // One of XState's build files as installed (patched), and as shipped: every edit undone, last first.
  const xstateDist = join(dirname(createRequire(import.meta.url).resolve("xstate/package.json")), "dist");
  const name = readdirSync(xstateDist).find((n) => /^raise-\w+\.cjs\.js$/.test(n))!;
  const patched = readFileSync(join(xstateDist, name), "utf8");
  const xstate = script.PATCHES.find((p) => p.package === "xstate")!;
  const edits = xstate.edits.filter((e) => e.files.test(name));
  const shipped = edits.toReversed().reduce((text, e) => text.split(e.to).join(e.from), patched);

  /** Patch `text` as that file in a folder of its own: what the file then holds, and the report. */
  function patch(text: string, folder: string): { text: string; report: PatchReport } {
    const dist = join(dir, folder);
    mkdirSync(dist, { recursive: true });
    writeFileSync(join(dist, name), text);
    const report = script.patchPackages({ dists: { xstate: dist, tsx: join(dir, "empty") } });
    return { text: readFileSync(join(dist, name), "utf8"), report: report.find((r) => r.package === "xstate")! };
  }
  mkdirSync(join(dir, "empty"));

  it("turns the shipped file into the installed one, and a second run changes nothing", () => {
    assert.ok(edits.length > 1 && !shipped.includes(edits[0]!.to));
    const first = patch(shipped, "fresh");
    assert.equal(first.text, patched);
    assert.deepEqual(
      xstate.edits.flatMap((e, i) => (edits.includes(e) ? [first.report.edits[i]] : [])),
      edits.map(() => ({ applied: 1, already: 0 })),
    );
    const again = patch(first.text, "fresh");
    assert.equal(again.text, patched);
    assert.ok(again.report.edits.every((e) => e.applied === 0));
  });

  it("leaves a file whose text one edit no longer finds as it is, every other edit too", () => {
    const moved = shipped.replace(edits[0]!.from, "/* a release that moved this */");
    const result = patch(moved, "moved");
    assert.equal(result.text, moved);
    assert.ok(result.report.edits.every((e) => e.applied === 0 && e.already === 0));
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
