/**
 * swarmd's layer rules, checked by dependency-cruiser in `make check` (`make check-layers`, `npm run check:layers`) over
 * the whole tree: src actors machines test bench bin scripts.
 *
 * docs/design.md, "Architecture" → "Allowed imports", states these rules as a table. The two say
 * the same thing: change one, change the other.
 *
 * Type-only imports (`import type`) count everywhere, cycles included: a type-only cycle still
 * ties its modules together (one cannot be read or changed without the other), and Biome's
 * `useImportType` marks every import used only for types, so "type-only" is what the code says.
 * Where a rule lets types through that it refuses at run time, it says so.
 */
import { builtinModules } from "node:module";

/** Node's own modules as dependency-cruiser names them (`fs`, `fs/promises`, `node:test`). */
const NODE_BUILTINS = `^(node:.+|${builtinModules.join("|")})$`;

/**
 * The in-sandbox harness program: what src/harness/harness-build.ts bundles from these entries
 * (main.cjs from main.ts, the boot from boot.ts, a cluster sandbox's supervisor.cjs from
 * supervisor.ts, and the stand-ins pi.cjs is built with).
 */
const HARNESS_ENTRIES = [
  "^src/harness/main[.]ts$",
  "^src/harness/boot[.]ts$",
  "^src/harness/supervisor[.]ts$",
  "^src/harness/deferred/",
];
/** The shared modules outside src/harness/ the harness program may reach: the agent spec (its types), its tool names and its approve rules. */
const HARNESS_SHARED = ["^src/spec/agent-spec[.]ts$", "^src/spec/tool-names[.]ts$", "^src/spec/approve[.]ts$"];

/**
 * The pure rules of machines/ that the daemon's modules state nothing of their own for: the drain
 * widening the ledger view folds as the agent machine does, and the text of a thrown value. Plain
 * functions, no xstate.
 */
const MACHINE_RULES = ["^machines/drain[.]ts$", "^machines/error-message[.]ts$"];

/** The console's own files; vite.config.ts is its build script (node runs it), not part of the page. */
const CONSOLE = "^src/console/";
const CONSOLE_BUILD = "^src/console/vite[.]config[.]ts$";
/** What the console's files import of the daemon's: the API's shared types, the view fold and the timeline fold. */
const CONSOLE_IMPORTS = ["^src/swarm-api[.]ts$", "^src/views/run-view[.]ts$", "^src/views/run-timeline[.]ts$"];
/** Everything of the daemon's that Vite bundles into the page: the above and what the fold needs. */
const CONSOLE_BUNDLE = [
  ...CONSOLE_IMPORTS,
  "^src/ledger/run-events[.]ts$",
  "^src/harness/protocol[.]ts$",
  "^src/api/limits[.]ts$",
  "^machines/drain[.]ts$",
];
/**
 * Read by the bundle for types only, never in the page: the API's shapes (`z.output` of the
 * schemas in src/api/, re-exported by swarm-api.ts), the agent spec, the agent machine's types.
 */
const CONSOLE_BUNDLE_TYPES = ["^src/api/", "^src/spec/agent-spec[.]ts$", "^machines/agent[.]types[.]ts$"];

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-cycles",
      comment: "No import cycles anywhere, type-only imports included (docs/design.md, Allowed imports).",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "machines-pure",
      comment:
        "machines/ runs only xstate and machines/ itself: no runtime code of src/ or actors/, no node module, no other package.",
      severity: "error",
      from: { path: "^machines/" },
      to: { dependencyTypesNot: ["type-only"], pathNot: ["^machines/", "^node_modules/xstate/"] },
    },
    {
      name: "machines-types",
      comment: "machines/ may take types from src/ (the API's vocabulary), nothing from actors/.",
      severity: "error",
      from: { path: "^machines/" },
      to: { dependencyTypes: ["type-only"], pathNot: ["^machines/", "^src/", "^node_modules/xstate/"] },
    },
    {
      name: "src-not-up",
      comment:
        "src/ is below actors/ and machines/: it imports neither, types included, but for the pure rules of machines/ it shares (MACHINE_RULES). Only the composition root, src/main.ts, wires the layers in.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/main[.]ts$" },
      to: { path: "^(actors|machines)/", pathNot: MACHINE_RULES },
    },
    {
      name: "composition-root-on-top",
      comment: "src/main.ts builds the daemon from every layer; only bin/swarmd.js imports it.",
      severity: "error",
      from: { pathNot: "^bin/swarmd[.]js$" },
      to: { path: "^src/main[.]ts$" },
    },
    {
      name: "harness-program",
      comment:
        "The in-sandbox harness program reaches only src/harness/, the shared modules listed in docs/design.md (agent-spec.ts, tool-names.ts, approve.ts), packages and node's modules.",
      severity: "error",
      from: { path: HARNESS_ENTRIES },
      to: { reachable: true, pathNot: ["^src/harness/", ...HARNESS_SHARED, "^node_modules/", NODE_BUILTINS] },
    },
    {
      name: "harness-folder",
      comment:
        "src/harness/ (the program and the daemon's side of its protocol) imports only itself, the shared spec modules and src/errors.ts (the daemon's client): the gateway, sandboxes and ledger import the harness's contracts, never the other way.",
      severity: "error",
      from: { path: "^src/harness/" },
      to: { dependencyTypes: ["local"], pathNot: ["^src/harness/", ...HARNESS_SHARED, "^src/errors[.]ts$"] },
    },
    {
      name: "console-imports",
      comment:
        "The console's files import, of the daemon's, only the API's shared types and the view and timeline folds.",
      severity: "error",
      from: { path: CONSOLE, pathNot: CONSOLE_BUILD },
      to: { dependencyTypes: ["local"], pathNot: [CONSOLE, ...CONSOLE_IMPORTS] },
    },
    {
      name: "console-bundle",
      comment:
        "What goes into the page (the console and the daemon modules it bundles) runs nothing else of the daemon's and no node module: it runs in a browser.",
      severity: "error",
      from: { path: [CONSOLE, ...CONSOLE_BUNDLE], pathNot: CONSOLE_BUILD },
      to: { dependencyTypesNot: ["type-only"], pathNot: [CONSOLE, ...CONSOLE_BUNDLE, "^node_modules/"] },
    },
    {
      name: "console-bundle-types",
      comment: "The page's modules take types only from each other, packages and the agent spec.",
      severity: "error",
      from: { path: [CONSOLE, ...CONSOLE_BUNDLE], pathNot: CONSOLE_BUILD },
      to: {
        dependencyTypes: ["type-only"],
        pathNot: [CONSOLE, ...CONSOLE_BUNDLE, ...CONSOLE_BUNDLE_TYPES, "^node_modules/"],
      },
    },
    {
      name: "production-not-tests",
      comment: "The daemon, its programs and bin/ never import tests, benchmarks or scripts.",
      severity: "error",
      from: { path: "^(src|actors|machines|bin)/" },
      to: { path: "^(test|bench|scripts)/" },
    },
    {
      name: "resolvable",
      comment: "Every import resolves (bin/ and scripts/ are outside tsconfig.json, so tsc does not check theirs).",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "^node_modules/" },
    exclude: { path: "^(dist|data|node_modules)/" },
    // Type-only imports are dependencies too (see the top of this file).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // Packages such as p-queue have only an `exports` map; resolve it as node does.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    moduleSystems: ["es6", "cjs"],
  },
};
