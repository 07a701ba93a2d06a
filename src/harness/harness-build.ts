import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BuildOptions, buildSync, type Metafile } from "esbuild";
import { AGENT_ENTRY, HARNESS_FILES, HASH_LINE_PREFIX, PI_PACKAGES } from "./harness-files.ts";

/** What a build was made from and with; the build is stale when any of it changed. */
export interface HarnessBuildRecord {
  /** When the build started (ms since the epoch): an input changed after it makes the build stale. */
  startedAt: number;
  /** Files the scripts were built from, relative to the root: swarmd's own, and the package.json of each bundled package. */
  inputs: string[];
  /** The node binary and flags the code caches were made for. */
  node: string;
  flags: string[];
}

/** How the harness is built is an input of the build too. */
const THIS_FILE = "src/harness/harness-build.ts";

/**
 * Packages left in node_modules, required from it when used: native addons and WebAssembly (found
 * beside their package's files), and the SDKs of providers the model gateway does not carry (it
 * refuses their models, so a harness never loads them).
 */
const FROM_NODE_MODULES = [
  "@mariozechner/clipboard",
  "@silvia-odwyer/photon-node",
  "@mistralai/mistralai",
  "@google/genai",
];

/** Packages pi imports but a harness does not use, replaced in pi.cjs by stand-ins that load them from node_modules at their first use. */
const DEFERRED: Record<string, string> = {
  "jiti/static": "./src/harness/deferred/jiti.ts",
  "cli-highlight": "./src/harness/deferred/cli-highlight.ts",
};

/**
 * Both scripts are CommonJS, compiled by the boot with V8 code caches made here, with every
 * `import()` turned into a `require` (a vm.Script compiled from a cache has no dynamic-import hook)
 * and `import.meta.url` naming the script's own file. Measured on Node 24 against node's own module
 * compile cache (`module.enableCompileCache`, which covers ES modules too) and a V8 startup snapshot
 * of main.cjs: neither starts a harness in less CPU and memory (docs/benchmarks.md, "Harness start
 * on Node 20 and 24"; bench/harness-start.ts).
 */
const COMMON: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node22", // engines.node
  write: false,
  metafile: true,
  logLevel: "error",
  legalComments: "none",
  supported: { "dynamic-import": false },
  define: { "import.meta.url": "__swarmd_import_meta_url" },
  banner: { js: 'var __swarmd_import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
};

/**
 * Build the harness into `<root>/dist/harness/` (see harness-files.ts): the boot, main.cjs, pi.cjs,
 * pi's package.json, then the code caches, made by running the built boot with the harness's own
 * node flags (V8 refuses a cache made under other flags). Built in a folder of its own, then each
 * file renamed into place, so a concurrent starter never reads half a file; the record goes last.
 */
export function buildHarness(root: string, flags: readonly string[]): HarnessBuildRecord {
  const startedAt = Date.now();
  const out = join(root, "dist", "harness");
  const work = join(root, "dist", `.harness-${process.pid}-${startedAt}`);
  mkdirSync(work, { recursive: true });
  try {
    const main = bundle({
      ...COMMON,
      absWorkingDir: root,
      entryPoints: ["src/harness/main.ts"],
      // main.ts's `import("./agent-entry.ts")` stays a require of that name, which the boot serves from pi.cjs.
      external: [...PI_PACKAGES, AGENT_ENTRY],
    });
    const pi = bundle({
      ...COMMON,
      absWorkingDir: root,
      stdin: { contents: piEntry(), resolveDir: root, loader: "js" },
      external: FROM_NODE_MODULES,
      alias: DEFERRED,
    });
    const boot = buildSync({
      ...COMMON,
      absWorkingDir: root,
      entryPoints: ["src/harness/boot.ts"],
      define: {},
      banner: {},
      write: true,
      outfile: join(work, HARNESS_FILES.boot),
    });
    // Plain node, no code cache: it starts once per sandbox and then waits on its stream.
    const supervisor = buildSync({
      ...COMMON,
      absWorkingDir: root,
      entryPoints: ["src/harness/supervisor.ts"],
      define: {},
      banner: {},
      write: true,
      outfile: join(work, HARNESS_FILES.supervisor),
    });
    writeFileSync(join(work, HARNESS_FILES.main), main.text);
    writeFileSync(join(work, HARNESS_FILES.pi), pi.text);
    writeFileSync(join(work, HARNESS_FILES.packageJson), piPackageJson(root));
    makeCodeCaches(work, out, flags);

    const record: HarnessBuildRecord = {
      startedAt,
      inputs: [
        ...new Set([
          ...sources(main.metafile),
          ...sources(pi.metafile),
          ...sources(boot.metafile!),
          ...sources(supervisor.metafile!),
          THIS_FILE,
        ]),
      ].sort(),
      node: nodeIdentity(),
      flags: [...flags],
    };
    writeFileSync(join(work, HARNESS_FILES.inputs), JSON.stringify(record));
    mkdirSync(out, { recursive: true });
    const order = [
      HARNESS_FILES.piCache,
      HARNESS_FILES.pi,
      HARNESS_FILES.mainCache,
      HARNESS_FILES.main,
      HARNESS_FILES.packageJson,
      HARNESS_FILES.boot,
      HARNESS_FILES.supervisor,
      HARNESS_FILES.inputs,
    ];
    for (const name of order) renameSync(join(work, name), join(out, name));
    // What builds before this layout left (one ES module and its inputs).
    for (const old of ["harness.mjs", "harness.inputs.json"]) rmSync(join(root, "dist", old), { force: true });
    return record;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * What a code cache depends on: V8 takes one only from its own version (and flags, kept apart). Not
 * the binary's path: the daemon in a container (swarm_start_service) runs the same node from another
 * path over a read-only installation, and must find the build fresh.
 */
export const nodeIdentity = () => `node ${process.version} v8 ${process.versions.v8} ${process.arch}`;

/**
 * pi.cjs's entry: `packages`, a function per name of `PI_PACKAGES`, and agent-entry.ts under `AGENT_ENTRY`,
 * all set up when pi.cjs runs, at the agent's making.
 */
function piEntry(): string {
  const lines = PI_PACKAGES.map((name, i) => ({
    imports: `import * as p${i} from ${JSON.stringify(name)};`,
    entry: `${JSON.stringify(name)}: () => p${i}`,
  }));
  lines.push({
    imports: 'import * as agentEntry from "./src/harness/agent-entry.ts";',
    entry: `${JSON.stringify(AGENT_ENTRY)}: () => agentEntry`,
  });
  return `${lines.map((l) => l.imports).join("\n")}\nexport const packages = { ${lines.map((l) => l.entry).join(", ")} };\n`;
}

/** One script, ASCII only, its first line the hash of the rest (see `HASH_LINE_PREFIX`). */
function bundle(options: BuildOptions): { text: string; metafile: Metafile } {
  const result = buildSync(options);
  // esbuild escapes every non-ASCII character of code (its default charset): what is left is in
  // comments, so the boot can read the script as latin1, a one-byte string, half the memory of a
  // two-byte one per harness.
  const text = (result.outputFiles?.[0]?.text ?? "").replace(/[\u0080-\uffff]/g, "?");
  const hash = createHash("sha256").update(text).digest("hex");
  return { text: `${HASH_LINE_PREFIX}${hash}\n${text}`, metafile: result.metafile! };
}

/** The inputs to watch: swarmd's own files, and for packages, each one's package.json (an install rewrites it). */
function sources(metafile: Metafile): string[] {
  return Object.keys(metafile.inputs).flatMap((path) => {
    if (path.startsWith("<")) return []; // stdin
    const inPackage = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(path);
    return [inPackage ? `${inPackage[1]}/package.json` : path];
  });
}

/** pi-coding-agent reads its name, version and config folder name from the package.json nearest its code. */
function piPackageJson(root: string): string {
  const pkg = JSON.parse(
    readFileSync(join(root, "node_modules/@mariozechner/pi-coding-agent/package.json"), "utf8"),
  ) as Record<string, unknown>;
  return `${JSON.stringify({ name: pkg.name, version: pkg.version, piConfig: pkg.piConfig }, null, 2)}\n`;
}

/**
 * Run the built boot once to make the caches. Without them every harness still starts, only
 * slower: a failure here is reported, never thrown.
 */
function makeCodeCaches(dir: string, finalDir: string, flags: readonly string[]): void {
  const made = spawnSync(process.execPath, [...flags, join(dir, HARNESS_FILES.boot), "--write-code-cache", finalDir], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 120_000,
    encoding: "utf8",
  });
  if (made.status !== 0) {
    process.emitWarning(
      `the harness's code caches were not made (${made.error?.message ?? `exit ${made.status ?? made.signal}`}): harnesses start without them. ${made.stderr ?? ""}`.trim(),
    );
  }
}
