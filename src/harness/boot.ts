/**
 * What node runs in every sandbox (`dist/harness/boot.cjs`, built by harness-build.ts): the harness's two
 * scripts, each compiled with the V8 code cache made for it at build time, so V8 neither parses
 * nor compiles what it already did once. main.cjs runs at once and serves the socket; pi.cjs (pi
 * and its packages, and the agent's side of the harness: most of the code) only when main.cjs
 * first asks for one of `FROM_PI`: when the agent is made. Both files are opened now, so a rebuild that renames new ones over them
 * meanwhile does not mix two builds in one harness. A cache V8 refuses (another node binary, other
 * flags) or that belongs to another build is ignored: the script is then compiled from source.
 *
 * `--write-code-cache <dir>` (harness-build.ts, at build time, with the harness's node flags) runs both
 * scripts' top levels and writes their caches, naming the scripts as they will be in `<dir>`;
 * `--code-cache-status` prints whether V8 takes the caches.
 */
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Script } from "node:vm";
import { FROM_PI, HARNESS_FILES, HASH_LENGTH, HASH_LINE_PREFIX } from "./harness-files.ts";

type Exports = Record<string, unknown>;
type CacheStatus = "accepted" | "rejected" | "none";

interface Opened {
  path: string;
  /** The name V8 gives the script (in stack traces). A cache keeps the name it was made under. */
  name: string;
  cachePath: string;
  fd: number;
  cacheFd: number | undefined;
}

interface Compiled {
  script: Script;
  hash: string;
  cache: CacheStatus;
}

const dir = __dirname;
const mode = process.argv[2];
// Caches are made in a build folder, then renamed into `dist/harness/`: named as they will be found there.
const finalDir = mode === "--write-code-cache" ? (process.argv[3] ?? dir) : dir;

function open(file: string, cacheFile: string): Opened {
  const path = join(dir, file);
  const cachePath = join(dir, cacheFile);
  let cacheFd: number | undefined;
  try {
    cacheFd = openSync(cachePath, "r");
  } catch {
    cacheFd = undefined;
  }
  return { path, name: join(finalDir, file), cachePath, fd: openSync(path, "r"), cacheFd };
}

/** Compile a script, with its cache when the cache names this script's hash. The scripts are ASCII (see harness-build.ts). */
function compile(file: Opened): Compiled {
  const source = readFileSync(file.fd, "latin1");
  closeSync(file.fd);
  const hash = source.startsWith(HASH_LINE_PREFIX)
    ? source.slice(HASH_LINE_PREFIX.length, HASH_LINE_PREFIX.length + HASH_LENGTH)
    : "";
  let cachedData: Buffer | undefined;
  if (file.cacheFd !== undefined) {
    const cache = readFileSync(file.cacheFd);
    closeSync(file.cacheFd);
    if (hash !== "" && cache.length > HASH_LENGTH && cache.toString("latin1", 0, HASH_LENGTH) === hash)
      cachedData = cache.subarray(HASH_LENGTH);
  }
  // The wrapper node gives a CommonJS module, on the script's first line (a comment): line numbers stay.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file.name,
    cachedData,
  });
  return {
    script,
    hash,
    cache: cachedData === undefined ? "none" : script.cachedDataRejected ? "rejected" : "accepted",
  };
}

function run(compiled: Compiled, path: string, require: NodeJS.Require): Exports {
  const module = { exports: {} as Exports };
  (compiled.script.runInThisContext() as (...args: unknown[]) => void)(
    module.exports,
    require,
    module,
    path,
    dirname(path),
  );
  return module.exports;
}

const mainFile = open(HARNESS_FILES.main, HARNESS_FILES.mainCache);
const piFile = open(HARNESS_FILES.pi, HARNESS_FILES.piCache);
let pi: { compiled: Compiled; exports: Exports } | undefined;

const loadPi = () => {
  if (!pi) {
    const compiled = compile(piFile);
    pi = { compiled, exports: run(compiled, piFile.path, createRequire(piFile.path)) };
  }
  return pi;
};
const mainRequire = createRequire(mainFile.path);
// What main.cjs does not hold itself: pi's packages and the agent's side from pi.cjs, node's own modules as usual.
const piPackage = (id: string) => (loadPi().exports.packages as Record<string, () => unknown>)[id]!();
const requireForMain = Object.assign(
  (id: string) => ((FROM_PI as readonly string[]).includes(id) ? piPackage(id) : mainRequire(id)),
  mainRequire,
);
const main = compile(mainFile);

if (mode === "--code-cache-status") {
  process.stdout.write(`${JSON.stringify({ main: main.cache, pi: compile(piFile).cache })}\n`);
} else if (mode === "--write-code-cache") {
  run(main, mainFile.path, requireForMain);
  for (const id of FROM_PI) piPackage(id); // their code compiled, so it is in the cache
  const { compiled } = loadPi();
  for (const [made, path] of [
    [main, mainFile.cachePath],
    [compiled, piFile.cachePath],
  ] as const) {
    writeFileSync(path, Buffer.concat([Buffer.from(made.hash, "latin1"), made.script.createCachedData()]));
  }
} else {
  const harness = run(main, mainFile.path, requireForMain);
  void (harness.main as () => Promise<void>)();
}
