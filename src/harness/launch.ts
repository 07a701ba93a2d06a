import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

/** The swarmd installation folder (holds `src/` and `node_modules/`); sandboxes mount it read-only. */
export const SWARMD_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The harness as one plain ES module (its packages stay in node_modules), relative to the root. */
export const HARNESS_BUNDLE = "dist/harness.mjs";
/** The source files the bundle was built from, as esbuild reported them. */
const HARNESS_INPUTS = "dist/harness.inputs.json";

/** Where the harness expects its folders, as the harness process sees them. */
export interface HarnessPaths {
  /** Control folder: socket, event log, spec.json. */
  controlDir: string;
  /** The agent's working folder (its tools' cwd). */
  workDir: string;
  /** Root of the swarmd installation as seen by the harness (default: this installation). */
  swarmdRoot?: string;
  /** Node binary as seen by the harness (default: this process's). */
  nodePath?: string;
  /** The user the agent's tools run as, when the harness runs as another. */
  agentUser?: { uid: number; gid: number };
}

/**
 * The argv that starts the harness. Every runtime starts it this way, only the paths differ
 * (host paths for an unisolated process, mount points inside bubblewrap or a container).
 */
export function harnessArgv(paths: HarnessPaths): string[] {
  const root = paths.swarmdRoot ?? SWARMD_ROOT;
  ensureHarnessBundle();
  return [
    paths.nodePath ?? process.execPath,
    // An idle agent mostly waits on its model: a small young generation costs it little time and
    // saves ~10 MB of resident memory per agent.
    "--max-semi-space-size=1",
    join(root, HARNESS_BUNDLE),
    "--control",
    paths.controlDir,
    "--work",
    paths.workDir,
    ...(paths.agentUser ? ["--agent-uid", String(paths.agentUser.uid), "--agent-gid", String(paths.agentUser.gid)] : []),
  ];
}

/**
 * Build `dist/harness.mjs` when it is missing or older than any file it was built from (esbuild's
 * own list of inputs, kept beside it, so a new import is never missed). Every sandbox runs this
 * plain module with node alone: no TypeScript loader (and its esbuild helper process) per agent,
 * a faster start and less memory per idle agent. Built to temporary names, then renamed, so a
 * concurrent starter never runs half a file.
 */
export function ensureHarnessBundle(): string {
  const out = join(SWARMD_ROOT, HARNESS_BUNDLE);
  const inputsFile = join(SWARMD_ROOT, HARNESS_INPUTS);
  if (isFresh(out, inputsFile)) return out;
  mkdirSync(dirname(out), { recursive: true });
  const temporary = `.${process.pid}.tmp`;
  const { metafile } = buildSync({
    absWorkingDir: SWARMD_ROOT,
    entryPoints: ["src/harness/main.ts"],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    outfile: out + temporary,
    metafile: true,
    logLevel: "error",
  });
  writeFileSync(inputsFile + temporary, JSON.stringify(Object.keys(metafile.inputs)));
  renameSync(inputsFile + temporary, inputsFile);
  renameSync(out + temporary, out);
  return out;
}

/** The bundle exists and no file it was built from (paths relative to the root) changed since. */
function isFresh(out: string, inputsFile: string): boolean {
  const built = mtime(out);
  if (built === undefined) return false;
  let inputs: unknown;
  try {
    inputs = JSON.parse(readFileSync(inputsFile, "utf8"));
  } catch {
    return false;
  }
  return Array.isArray(inputs) && inputs.every((path) => (mtime(join(SWARMD_ROOT, String(path))) ?? Infinity) <= built);
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}
