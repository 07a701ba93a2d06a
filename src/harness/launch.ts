import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The swarmd installation folder (holds `src/` and `node_modules/`); sandboxes mount it read-only. */
export const SWARMD_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const require = createRequire(import.meta.url);

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
  const tsxLoader = join(root, relative(SWARMD_ROOT, require.resolve("tsx")));
  return [
    paths.nodePath ?? process.execPath,
    "--import",
    tsxLoader,
    join(root, "src/harness/main.ts"),
    "--control",
    paths.controlDir,
    "--work",
    paths.workDir,
  ];
}
