import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage } from "../errors.ts";
import { buildHarness, type HarnessBuildRecord, nodeIdentity } from "./harness-build.ts";
import { HARNESS_FILES } from "./harness-files.ts";

/** The swarmd installation folder (holds `src/` and `node_modules/`); sandboxes mount it read-only. */
export const SWARMD_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The built harness (see harness-files.ts), relative to the root: what sandboxes mount of `dist/`. */
export const HARNESS_DIR = "dist/harness";

/**
 * Node's flags for every harness. The young generation is capped at 4 MB (node's default lets it
 * grow to 16 MB): a harness never prompted stays at V8's smallest one anyway (49.5 MiB RSS at ready
 * with a cap of 1 MB or 4), and a prompted one spends less of its turn collecting garbage (one
 * prompted sandbox ~450 -> ~370 ms of CPU against a 1 MB cap, for ~3 MiB more RSS; 8 and 16 MB
 * gained nothing more: bench/prompted-harness.ts, docs/benchmarks.md). The code caches are made
 * under the same flags (V8 takes a cache only under the flags it was made with).
 */
export const HARNESS_NODE_FLAGS = ["--max-semi-space-size=4"];

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
  /** Started ahead for the pool: its spec, users and env come when an agent takes it (pool-take.ts). */
  pooled?: boolean;
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
    ...HARNESS_NODE_FLAGS,
    join(root, HARNESS_DIR, HARNESS_FILES.boot),
    "--control",
    paths.controlDir,
    "--work",
    paths.workDir,
    ...(paths.agentUser
      ? ["--agent-uid", String(paths.agentUser.uid), "--agent-gid", String(paths.agentUser.gid)]
      : []),
    ...(paths.pooled ? ["--pooled"] : []),
  ];
}

/**
 * Build `dist/harness/` (harness-build.ts) when it is missing or stale: a file it was built from
 * changed since (esbuild's own list of inputs, so a new import is never missed; a package counts as
 * changed when its package.json does, as an install rewrites it), or this node or its flags are not
 * the ones its code caches were made for. Every sandbox runs the built scripts with node alone: no
 * TypeScript loader per agent, one file read instead of a thousand module loads, and V8's code
 * cache instead of parsing. Returns the folder's host path.
 *
 * A build made by another node is still this code: when it cannot be made again (the daemon in a
 * container over a read-only checkout, its image's node not the host's), it is used as it is, and
 * V8 compiles the scripts from source (boot.ts ignores caches it refuses).
 */
export function ensureHarnessBundle(): string {
  const dir = join(SWARMD_ROOT, HARNESS_DIR);
  const state = freshness(dir);
  if (state === "fresh") return dir;
  try {
    buildHarness(SWARMD_ROOT, HARNESS_NODE_FLAGS);
  } catch (err) {
    if (state !== "other-node") throw err;
    if (!warnedOtherNode) {
      warnedOtherNode = true;
      process.emitWarning(
        `dist/harness was built by another node and cannot be built again here (${errorMessage(err)}): harnesses start without its code caches`,
      );
    }
  }
  return dir;
}

let warnedOtherNode = false;

/** `other-node`: built from the current files, but by another node or under other flags (its code caches do not fit). */
function freshness(dir: string): "fresh" | "other-node" | "stale" {
  let record: HarnessBuildRecord;
  try {
    record = JSON.parse(readFileSync(join(dir, HARNESS_FILES.inputs), "utf8")) as HarnessBuildRecord;
  } catch {
    return "stale";
  }
  if (
    ![HARNESS_FILES.boot, HARNESS_FILES.main, HARNESS_FILES.pi, HARNESS_FILES.supervisor].every(
      (name) => mtime(join(dir, name)) !== undefined,
    )
  )
    return "stale";
  const inputsFresh =
    Array.isArray(record.inputs) &&
    record.inputs.every((path) => (mtime(join(SWARMD_ROOT, String(path))) ?? Infinity) <= record.startedAt);
  if (!inputsFresh) return "stale";
  return record.node === nodeIdentity() && record.flags?.join(" ") === HARNESS_NODE_FLAGS.join(" ")
    ? "fresh"
    : "other-node";
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}
