/**
 * Run after every install (`postinstall`): small changes to the built files of two packages the
 * daemon runs on, each an exact text replaced by another. What each does, why, what it saved and
 * its upstream form: docs/design.md, "Patched packages". Idempotent. A text a release no longer has
 * is reported and left alone: the package then works as shipped, only slower or larger, and
 * test/setup/patched-packages.test.ts fails until the patch is brought up to date.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * What to change: in each file of `package`'s `dist/` folder that `files` matches, `from` becomes
 * `to` (every occurrence). An edit is in place where a file has `to`; a file gets all the edits
 * meant for it or none (when one of them finds neither its `from` nor its `to`).
 */
export const PATCHES = [
  {
    package: "tsx",
    what: "esbuild's keepNames turned off",
    edits: [
      {
        files: /\.(c|m)?js$/,
        from: "minifyWhitespace:!0,keepNames:!0}",
        to: "minifyWhitespace:!0,keepNames:!1}",
      },
    ],
  },
  {
    package: "xstate",
    what: "snapshot values, tags, history nodes, candidates and eventless sources reused",
    edits: [
      // State.ts, createMachineSnapshot and cloneMachineSnapshot.
      {
        files: /^raise-.*\.js$/,
        from: `function createMachineSnapshot(config, machine) {
  return {`,
        to: `function createMachineSnapshot(config, machine, previous) {
  // Made from a snapshot with the same state nodes: the same value and tags (swarmd's patch).
  const sameNodes = previous !== undefined && previous._nodes === config._nodes;
  return {`,
      },
      {
        files: /^raise-.*\.js$/,
        from: `    value: getStateValue(machine.root, config._nodes),
    tags: new Set(config._nodes.flatMap(sn => sn.tags)),`,
        to: `    value: sameNodes ? previous.value : getStateValue(machine.root, config._nodes),
    tags: sameNodes ? previous.tags : new Set(config._nodes.flatMap(sn => sn.tags)),`,
      },
      {
        files: /^raise-.*\.js$/,
        from: `  return createMachineSnapshot({
    ...snapshot,
    ...config
  }, snapshot.machine);`,
        to: `  return createMachineSnapshot({
    ...snapshot,
    ...config
  }, snapshot.machine, snapshot);`,
      },
      // stateUtils.ts, getHistoryNodes.
      {
        files: /^raise-.*\.js$/,
        from: `function getHistoryNodes(stateNode) {
  return Object.keys(stateNode.states).map(key => stateNode.states[key]).filter(sn => sn.type === 'history');
}`,
        to: `const historyNodesCache = new WeakMap();
function getHistoryNodes(stateNode) {
  let historyNodes = historyNodesCache.get(stateNode);
  if (historyNodes === undefined) {
    historyNodes = Object.keys(stateNode.states).map(key => stateNode.states[key]).filter(sn => sn.type === 'history');
    historyNodesCache.set(stateNode, historyNodes);
  }
  return historyNodes;
}`,
      },
      // actions/stopChild.ts, resolveStop.
      {
        files: /^raise-.*\.js$/,
        from: `    children = {
      ...children
    };
    delete children[resolvedActorRef.id];`,
        to: `    children = {};
    for (const id of Object.keys(snapshot.children)) {
      if (id !== resolvedActorRef.id) {
        children[id] = snapshot.children[id];
      }
    }`,
      },
      // stateUtils.ts, selectEventlessTransitions.
      {
        files: /^raise-.*\.js$/,
        from: `    loop: for (const s of [stateNode].concat(getProperAncestors(stateNode, undefined))) {
      if (!s.always) {
        continue;
      }`,
        to: `    loop: for (const s of getEventlessSources(stateNode)) {`,
      },
      {
        files: /^raise-.*\.js$/,
        from: `  return removeConflictingTransitions(Array.from(enabledTransitionSet), new Set(nextState._nodes), nextState.historyValue);
}`,
        to: `  if (enabledTransitionSet.size === 0) {
    return [];
  }
  return removeConflictingTransitions(Array.from(enabledTransitionSet), new Set(nextState._nodes), nextState.historyValue);
}
const eventlessSourcesCache = new WeakMap();
/** The state node and its ancestors that have eventless transitions, innermost first. */
function getEventlessSources(stateNode) {
  let sources = eventlessSourcesCache.get(stateNode);
  if (sources === undefined) {
    sources = [stateNode].concat(getProperAncestors(stateNode, undefined)).filter(s => s.always);
    eventlessSourcesCache.set(stateNode, sources);
  }
  return sources;
}`,
      },
      // StateNode.ts, next: the candidates cached by event type in a Map, not under a string key made per call.
      {
        files: /^StateMachine-.*\.js$/,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: XState's own text, matched as written
        from: "const candidates = memo(this, `candidates-${eventType}`, () => ",
        to: "const candidates = memoCandidates(this, eventType, () => ",
      },
      {
        files: /^StateMachine-.*\.js$/,
        from: `const cache = new WeakMap();
function memo(object, key, fn) {`,
        to: `const cache = new WeakMap();
const candidatesCache = new WeakMap();
function memoCandidates(stateNode, eventType, fn) {
  let byType = candidatesCache.get(stateNode);
  if (byType === undefined) {
    byType = new Map();
    candidatesCache.set(stateNode, byType);
  }
  let candidates = byType.get(eventType);
  if (candidates === undefined) {
    candidates = fn();
    byType.set(eventType, candidates);
  }
  return candidates;
}
function memo(object, key, fn) {`,
      },
    ],
  },
];

/** The package's `dist/` folder, or undefined when it is not installed (a production install without tsx). */
function distOf(name) {
  try {
    return join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), "dist");
  } catch {
    return undefined;
  }
}

/**
 * Apply (or, with `write` false, only check) every patch, in the installed packages or in the
 * folders `dists` names (package → folder). Per package: how many files each edit changed now and
 * found already changed; an edit found in no file did not apply.
 */
export function patchPackages({ write = true, dists = {} } = {}) {
  const report = [];
  for (const patch of PATCHES) {
    const dist = dists[patch.package] ?? distOf(patch.package);
    if (!dist) continue;
    const edits = patch.edits.map(() => ({ applied: 0, already: 0 }));
    for (const name of readdirSync(dist)) {
      const mine = patch.edits.flatMap((edit, i) => (edit.files.test(name) ? [i] : []));
      if (mine.length === 0) continue;
      const file = join(dist, name);
      const original = readFileSync(file, "utf8");
      // All of a file's edits or none: one without the others could leave a name undefined.
      if (!mine.every((i) => original.includes(patch.edits[i].to) || original.includes(patch.edits[i].from))) continue;
      let text = original;
      for (const i of mine) {
        const edit = patch.edits[i];
        if (text.includes(edit.to)) edits[i].already++;
        else {
          text = text.split(edit.from).join(edit.to);
          edits[i].applied++;
        }
      }
      if (write && text !== original) writeFileSync(file, text);
    }
    report.push({ package: patch.package, what: patch.what, edits });
  }
  return report;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // `--check`: change nothing, print the report as JSON (test/setup/patched-packages.test.ts).
  if (process.argv.includes("--check")) {
    console.log(JSON.stringify(patchPackages({ write: false })));
    process.exit(0);
  }
  for (const { package: name, what, edits } of patchPackages()) {
    const missing = edits.filter((e) => e.applied + e.already === 0).length;
    const applied = edits.reduce((n, e) => n + e.applied, 0);
    if (missing > 0)
      console.warn(
        `patch-packages: ${name}: ${missing} of ${edits.length} edit(s) not found; left as shipped (see scripts/patch-packages.mjs)`,
      );
    else if (applied > 0) console.log(`patch-packages: ${name}: ${what} (${applied} change(s))`);
  }
}
