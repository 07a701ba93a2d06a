/**
 * Harness start benchmark (issue 22): one bare harness (no sandbox, no daemon) from its spawn to a
 * socket that answers ("harness ready"), and to its agent made (`get_session_stats`, which loads
 * pi), on each node of BENCH_NODES, in the same run, starts taken in turn so load hits all alike:
 * - the built harness as every runtime starts it (main.cjs and pi.cjs with V8 code caches made by
 *   that node, see harness-build.ts);
 * - the same without code caches (V8 compiles from source);
 * - on Node 22.1 and later, with node's module compile cache on as well (`NODE_COMPILE_CACHE`,
 *   filled by the untimed starts): it covers what node's own loader compiles (boot.cjs and
 *   packages required from node_modules), not the two scripts the boot compiles itself; and with
 *   node's compile cache instead of the boot's: both scripts loaded by `require()`;
 * - from a V8 startup snapshot (`node --snapshot-blob`, built by `--build-snapshot` from an entry
 *   that runs main.cjs's top level; pi.cjs is compiled at the agent's making with the boot's cache,
 *   which Node 24 refuses in a process started from a snapshot), and one that holds pi too; a node
 *   that cannot build one says why.
 * CPU is the harness process's (all its threads) when it is ready; memory then and once its agent is
 * made: RSS, and in brackets its private part (what one more harness costs: the node binary's pages are shared).
 * Not a test: nothing is asserted. `npx tsx bench/harness-start.ts`.
 *
 * BENCH_NODES (comma-separated node binaries; default /usr/bin/node when it is another version than
 * this node, then this node), BENCH_STARTS (20) timed starts of each after BENCH_WARMUP (2) untimed ones.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { harnessModelFile } from "../src/gateway/harness-model.ts";
import { SCRIPTED_MODEL } from "../src/gateway/scripted-model.ts";
import { attachHarnessClient } from "../src/harness/client.ts";
import { FROM_PI, HARNESS_FILES, HASH_LENGTH, HASH_LINE_PREFIX } from "../src/harness/harness-files.ts";
import { ensureHarnessBundle, HARNESS_NODE_FLAGS, SWARMD_ROOT } from "../src/harness/launch.ts";
import { CONTROL_FILES } from "../src/harness/protocol.ts";
import { env, fmtMiB, fmtMs, fmtRatio, markdownTable, median, p90, since } from "./stats.ts";

const STARTS = env("BENCH_STARTS", 20);
const WARMUP = env("BENCH_WARMUP", 2);

interface Variant {
  label: string;
  argv: (control: string, work: string) => string[];
  env?: Record<string, string>;
}

interface Sample {
  readyMs: number;
  cpuMs: number;
  rssReady: number;
  ussReady: number;
  agentMs: number;
  rssAgent: number;
  ussAgent: number;
}

const versionOf = (node: string) => execFileSync(node, ["--version"], { encoding: "utf8" }).trim();

function nodes(): string[] {
  if (process.env.BENCH_NODES) return process.env.BENCH_NODES.split(",").filter(Boolean);
  const list = [process.execPath];
  if (existsSync("/usr/bin/node") && versionOf("/usr/bin/node") !== process.version) list.unshift("/usr/bin/node");
  return list;
}

/** A copy of the built harness whose code caches `node` made (as harness-build.ts makes them for the daemon's node). */
function buildFor(node: string, root: string, caches: boolean): string {
  const dir = join(root, caches ? "cached" : "uncached");
  cpSync(ensureHarnessBundle(), dir, { recursive: true });
  for (const cache of [HARNESS_FILES.mainCache, HARNESS_FILES.piCache]) rmSync(join(dir, cache), { force: true });
  if (caches)
    execFileSync(node, [...HARNESS_NODE_FLAGS, join(dir, HARNESS_FILES.boot), "--write-code-cache", dir], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
    });
  return dir;
}

/**
 * The snapshot's entry: main.cjs's top level run as the boot runs it (pi.cjs too with `withPi`);
 * the harness's `main` is the snapshot's main function. Its `require` is node's own (built-in
 * modules only) while the snapshot is built, the scripts' own folder's after.
 */
function snapshotEntry(dir: string, withPi: boolean): string {
  return `"use strict";
const { readFileSync } = require("node:fs");
const { join } = require("node:path");
const { startupSnapshot } = require("node:v8");
const dir = ${JSON.stringify(dir)};
const FROM_PI = ${JSON.stringify(FROM_PI)};
const HASH_LENGTH = ${HASH_LENGTH};
let runtimeRequire = require;
let built = false;
const wrap = (source) => "(function (exports, require, module, __filename, __dirname) {" + source + "\\n})";
// While the snapshot is built, eval (it cannot hold a vm.Script); once it runs, as the boot does: with the code cache.
const compile = (path, cachePath) => {
  const source = readFileSync(path, "latin1");
  if (!built) return (0, eval)(wrap(source) + "\\n//# sourceURL=" + path);
  let cachedData;
  try {
    const cache = readFileSync(cachePath);
    if (cache.toString("latin1", 0, HASH_LENGTH) === source.slice(${HASH_LINE_PREFIX.length}, ${HASH_LINE_PREFIX.length} + HASH_LENGTH))
      cachedData = cache.subarray(HASH_LENGTH);
  } catch {}
  const { Script } = runtimeRequire("node:vm");
  return new Script(wrap(source), { filename: path, cachedData }).runInThisContext();
};
const load = (file, cacheFile, req) => {
  const path = join(dir, file);
  const module = { exports: {} };
  compile(path, join(dir, cacheFile))(module.exports, req, module, path, dir);
  return module.exports;
};
let pi;
const piPackage = (id) => (pi ??= load(${JSON.stringify(HARNESS_FILES.pi)}, ${JSON.stringify(HARNESS_FILES.piCache)}, (id) => runtimeRequire(id))).packages[id]();
const harness = load(${JSON.stringify(HARNESS_FILES.main)}, ${JSON.stringify(HARNESS_FILES.mainCache)}, (id) => (FROM_PI.includes(id) ? piPackage(id) : runtimeRequire(id)));
if (${withPi}) for (const id of FROM_PI) piPackage(id);
startupSnapshot.setDeserializeMainFunction(() => {
  built = true;
  runtimeRequire = require("node:module").createRequire(join(dir, ${JSON.stringify(HARNESS_FILES.main)}));
  harness.main();
});
`;
}

/**
 * A boot that leaves compiling to node's loader: main.cjs and pi.cjs loaded by `require`, so that
 * node's module compile cache (NODE_COMPILE_CACHE) covers them instead of the boot's own caches.
 */
function requireBoot(dir: string, root: string): string {
  const path = join(root, "require-boot.cjs");
  writeFileSync(
    path,
    `"use strict";
const Module = require("node:module");
const { join } = require("node:path");
const dir = ${JSON.stringify(dir)};
const FROM_PI = ${JSON.stringify(FROM_PI)};
const load = Module._load;
let pi;
Module._load = function (request, parent, isMain) {
  if (!FROM_PI.includes(request)) return load.call(this, request, parent, isMain);
  pi ??= load.call(this, join(dir, ${JSON.stringify(HARNESS_FILES.pi)}), parent, false);
  return pi.packages[request]();
};
require(join(dir, ${JSON.stringify(HARNESS_FILES.main)})).main();
`,
  );
  return path;
}

/** Builds a snapshot blob with `node`; returns its path, or why it could not. */
function buildSnapshot(node: string, dir: string, root: string, withPi: boolean): string | { failed: string } {
  const name = withPi ? "with-pi" : "main";
  const entry = join(root, `snapshot-${name}.cjs`);
  const blob = join(root, `snapshot-${name}.blob`);
  writeFileSync(entry, snapshotEntry(dir, withPi));
  const made = spawnSync(node, [...HARNESS_NODE_FLAGS, "--snapshot-blob", blob, "--build-snapshot", entry], {
    cwd: root,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (made.status === 0 && existsSync(blob)) return blob;
  const why = `${made.stderr}`
    .split("\n")
    .find((l) => /error|failed|not supported|Cannot/i.test(l) && !l.includes("Warning"));
  return { failed: (why ?? `exit ${made.status ?? made.signal}`).trim() };
}

function variantsFor(node: string, root: string): { variants: Variant[]; notes: string[] } {
  const version = versionOf(node);
  const cached = buildFor(node, root, true);
  const uncached = buildFor(node, root, false);
  const boot = (dir: string) => (control: string, work: string) => [
    node,
    ...HARNESS_NODE_FLAGS,
    join(dir, HARNESS_FILES.boot),
    "--control",
    control,
    "--work",
    work,
  ];
  const variants: Variant[] = [
    { label: `${version}, code caches (as built)`, argv: boot(cached) },
    { label: `${version}, no code caches`, argv: boot(uncached) },
  ];
  const [major = 0, minor = 0] = version.slice(1).split(".").map(Number);
  if (major > 22 || (major === 22 && minor >= 1)) {
    variants.push({
      label: `${version}, code caches + NODE_COMPILE_CACHE`,
      argv: boot(cached),
      env: { NODE_COMPILE_CACHE: join(root, "compile-cache") },
    });
    const plain = requireBoot(uncached, root);
    variants.push({
      label: `${version}, require() + NODE_COMPILE_CACHE, no boot caches`,
      argv: (control, work) => [node, ...HARNESS_NODE_FLAGS, plain, "--control", control, "--work", work],
      env: { NODE_COMPILE_CACHE: join(root, "compile-cache-require") },
    });
  }
  const notes: string[] = [];
  for (const withPi of [false, true]) {
    const blob = buildSnapshot(node, cached, root, withPi);
    const label = `${version}, startup snapshot${withPi ? " holding pi" : ""}`;
    if (typeof blob !== "string") notes.push(`${label}: cannot be built: ${blob.failed}`);
    else
      variants.push({
        label,
        // The first argument stands where a script would: the harness's own arguments follow it.
        argv: (control, work) => [
          node,
          ...HARNESS_NODE_FLAGS,
          "--snapshot-blob",
          blob,
          join(cached, HARNESS_FILES.boot),
          "--control",
          control,
          "--work",
          work,
        ],
      });
  }
  return { variants, notes };
}

/**
 * CPU so far (every thread's time on a CPU, from schedstat, in ns), and resident memory: all of
 * it, and what is the process's own (not shared with other harnesses: the node binary's pages are).
 */
function procStat(pid: number): { cpuMs: number; rss: number; uss: number } {
  let cpuNs = 0;
  for (const task of readdirSync(`/proc/${pid}/task`))
    cpuNs += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? Number.NaN) * 1024;
  return { cpuMs: cpuNs / 1e6, rss: kb("Rss"), uss: kb("Private_Clean") + kb("Private_Dirty") };
}

async function startOnce(variant: Variant): Promise<Sample> {
  const root = mkdtempSync(join(tmpdir(), "swarmd-harness-start-"));
  const control = join(root, "control");
  const work = join(root, "work");
  mkdirSync(control);
  mkdirSync(work);
  writeFileSync(join(control, CONTROL_FILES.spec), JSON.stringify({ name: "start", script: [] }));
  writeFileSync(join(control, CONTROL_FILES.model), JSON.stringify(harnessModelFile(SCRIPTED_MODEL, false)));
  const [command, ...args] = variant.argv(control, work);
  const started = performance.now();
  const child: ChildProcess = spawn(command!, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...variant.env },
  });
  try {
    let output = "";
    const readyMs = await new Promise<number>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        output += d.toString();
        if (output.includes("harness ready")) resolve(since(started));
      });
      child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
      child.once("exit", (code) => reject(new Error(`${variant.label}: the harness exited (${code}): ${output}`)));
    });
    const ready = procStat(child.pid!);
    const socket = connect(join(control, CONTROL_FILES.socket));
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const client = attachHarnessClient(socket, 0, { onEvent: () => undefined });
    await client.request({ type: "get_session_stats" });
    const agentMs = since(started);
    const agent = procStat(child.pid!);
    client.close();
    return {
      readyMs,
      cpuMs: ready.cpuMs,
      rssReady: ready.rss,
      ussReady: ready.uss,
      agentMs,
      rssAgent: agent.rss,
      ussAgent: agent.uss,
    };
  } finally {
    // SIGTERM, as a daemon stops a harness: node writes its compile cache (NODE_COMPILE_CACHE) on the way out.
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(killer);
    rmSync(root, { recursive: true, force: true });
  }
}

/** Spawn → exit of a bare `node -e 0`, in ms. */
function bareNodeStart(node: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(node, ["-e", "0"], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(since(started)));
  });
}

async function main(): Promise<void> {
  const work = join(SWARMD_ROOT, "dist", `.bench-harness-start-${process.pid}`);
  const notes: string[] = [];
  const variants: Variant[] = [];
  try {
    for (const [i, node] of nodes().entries()) {
      const root = join(work, String(i));
      mkdirSync(root, { recursive: true });
      const made = variantsFor(node, root);
      variants.push(...made.variants);
      notes.push(...made.notes);
    }
    for (let i = 0; i < WARMUP; i++) for (const variant of variants) await startOnce(variant);
    const samples = new Map<Variant, Sample[]>(variants.map((v) => [v, []]));
    const bare = new Map<string, number[]>(nodes().map((node) => [node, []]));
    for (let i = 0; i < STARTS; i++) {
      for (const variant of variants) samples.get(variant)!.push(await startOnce(variant));
      for (const [node, times] of bare) times.push(await bareNodeStart(node));
    }

    const base = median(samples.get(variants[0]!)!.map((s) => s.readyMs));
    console.log(
      `# harness start benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}, ${STARTS} starts each after ${WARMUP} untimed\n`,
    );
    console.log(
      markdownTable(
        [
          "bare harness (median, p90)",
          "spawn → socket answers",
          "/ first row",
          "CPU by then",
          "RSS (private) then",
          "spawn → agent made (pi loaded)",
          "RSS (private) then",
        ],
        variants.map((v) => {
          const s = samples.get(v)!;
          const col = (pick: (s: Sample) => number) => s.map(pick);
          return [
            v.label,
            `${fmtMs(median(col((x) => x.readyMs)))} (${fmtMs(p90(col((x) => x.readyMs)))})`,
            fmtRatio(median(col((x) => x.readyMs)), base),
            fmtMs(median(col((x) => x.cpuMs))),
            `${fmtMiB(median(col((x) => x.rssReady)))} (${fmtMiB(median(col((x) => x.ussReady)))})`,
            `${fmtMs(median(col((x) => x.agentMs)))} (${fmtMs(p90(col((x) => x.agentMs)))})`,
            `${fmtMiB(median(col((x) => x.rssAgent)))} (${fmtMiB(median(col((x) => x.ussAgent)))})`,
          ];
        }),
      ),
    );
    console.log(
      `\nA bare \`node -e 0\` (spawn → exit, median): ${[...bare].map(([node, times]) => `${versionOf(node)} ${fmtMs(median(times))}`).join(", ")}.`,
    );
    for (const note of notes) console.log(`\n${note}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
