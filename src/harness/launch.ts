import { mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

/** The swarmd installation folder (holds `src/` and `node_modules/`); sandboxes mount it read-only. */
export const SWARMD_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The harness as one plain ES module (its packages stay in node_modules), relative to the root. */
export const HARNESS_BUNDLE = "dist/harness.mjs";
const SOURCES = ["src/harness", "src/spec"];

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
  ];
}

/**
 * Build `dist/harness.mjs` when it is missing or older than its sources. Every sandbox runs this
 * plain module with node alone: no TypeScript loader (and its esbuild helper process) per agent,
 * a faster start and less memory per idle agent. Built to a temporary name, then renamed, so a
 * concurrent starter never runs half a file.
 */
export function ensureHarnessBundle(): string {
  const out = join(SWARMD_ROOT, HARNESS_BUNDLE);
  const built = mtime(out);
  if (built !== undefined && SOURCES.every((dir) => newest(join(SWARMD_ROOT, dir)) <= built)) return out;
  mkdirSync(dirname(out), { recursive: true });
  const temporary = `${out}.${process.pid}.tmp`;
  buildSync({
    entryPoints: [join(SWARMD_ROOT, "src/harness/main.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    outfile: temporary,
    logLevel: "error",
  });
  renameSync(temporary, out);
  return out;
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : (mtime(path) ?? 0));
  }
  return latest;
}
