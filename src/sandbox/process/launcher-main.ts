/**
 * The launcher (launcher.ts): a small node process, the daemon's child, that starts harnesses for
 * it. Starting a process forks the one that starts it; forking the daemon copies the page tables of
 * its large heap (about 10 ms of its thread per harness, more under load), forking this process
 * next to nothing. Run by node itself (type stripping, node's own modules only), never by the
 * daemon's loader. It takes requests over its IPC channel from the daemon alone, and ends with it.
 *
 * Request: `{ id, file, args, env, cwd, output, fdArgs? }`. Answers: `{ id, pid }` once the process
 * runs (or `{ id, error }`), then `{ id, exit: { code, signal } }` when it ends. Or a command run
 * to its end for its output (the disk watch's `du`): `{ id, run: { file, args, timeoutMs, maxBytes } }`,
 * answered `{ id, ran: { stdout, error? } }`.
 */
import { type Command, execCommand } from "../command.ts";
import { type DetachedLaunch, spawnDetached } from "./detached-spawn.ts";

export interface LaunchRequest extends Omit<DetachedLaunch, "extraPipes"> {
  id: number;
}

export interface RunRequest {
  id: number;
  run: Command;
}

export type LaunchAnswer =
  | { id: number; pid: number }
  | { id: number; error: string }
  | { id: number; exit: { code: number | null; signal: string | null } }
  | { id: number; ran: { stdout: string; error?: string } };

function answer(message: LaunchAnswer): void {
  process.send?.(message);
}

function launch(req: LaunchRequest): void {
  try {
    const child = spawnDetached(req);
    child.once("error", (err) => answer({ id: req.id, error: err.message }));
    child.once("spawn", () => answer({ id: req.id, pid: child.pid! }));
    child.once("exit", (code, signal) => answer({ id: req.id, exit: { code, signal } }));
  } catch (err) {
    answer({ id: req.id, error: err instanceof Error ? err.message : String(err) });
  }
}

function run({ id, run: command }: RunRequest): void {
  void execCommand(command).then(({ stdout, error }) =>
    answer({ id, ran: { stdout, ...(error ? { error: error.message } : {}) } }),
  );
}

process.on("message", (message: LaunchRequest | RunRequest) => {
  if ("run" in message) run(message);
  else launch(message);
});
// The daemon is gone (or closed the channel): what was started lives on, as the daemon's own starts would.
process.on("disconnect", () => process.exit(0));
