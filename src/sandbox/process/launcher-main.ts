/**
 * The launcher (launcher.ts): a small node process, the daemon's child, that starts harnesses for
 * it. Starting a process forks the one that starts it; forking the daemon copies the page tables of
 * its large heap (about 10 ms of its thread per harness, more under load), forking this process
 * next to nothing. Run by node itself (type stripping, node's own modules only), never by the
 * daemon's loader. It takes requests over its IPC channel from the daemon alone, and ends with it.
 *
 * Request: `{ id, file, args, env, cwd, output, fdArgs? }`. Answers: `{ id, pid }` once the process
 * runs (or `{ id, error }`), then `{ id, exit: { code, signal } }` when it ends.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Writable } from "node:stream";

export interface LaunchRequest {
  id: number;
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Where its stdout and stderr go (made, mode 0600). */
  output: string;
  /** Written NUL-separated to descriptor 3, then closed (bwrap's `--args`). */
  fdArgs?: string[];
}

export type LaunchAnswer =
  | { id: number; pid: number }
  | { id: number; error: string }
  | { id: number; exit: { code: number | null; signal: string | null } };

const ARGS_FD = 3;

function answer(message: LaunchAnswer): void {
  process.send?.(message);
}

function launch(req: LaunchRequest): void {
  let output: number | undefined;
  try {
    output = openSync(req.output, "w", 0o600);
    const child = spawn(req.file, req.args, {
      detached: true,
      stdio: req.fdArgs ? ["ignore", output, output, "pipe"] : ["ignore", output, output],
      env: req.env,
      cwd: req.cwd,
    });
    child.once("error", (err) => answer({ id: req.id, error: err.message }));
    child.once("spawn", () => {
      const pipe = child.stdio[ARGS_FD] as Writable | null | undefined;
      if (req.fdArgs && pipe) {
        // A launch that dies before reading leaves the pipe broken: its exit is reported.
        pipe.on("error", () => undefined);
        pipe.end(req.fdArgs.map((arg) => `${arg}\0`).join(""));
      }
      answer({ id: req.id, pid: child.pid! });
    });
    child.once("exit", (code, signal) => answer({ id: req.id, exit: { code, signal } }));
  } catch (err) {
    answer({ id: req.id, error: err instanceof Error ? err.message : String(err) });
  } finally {
    if (output !== undefined) closeSync(output);
  }
}

process.on("message", (message) => launch(message as LaunchRequest));
// The daemon is gone (or closed the channel): what was started lives on, as the daemon's own starts would.
process.on("disconnect", () => process.exit(0));
