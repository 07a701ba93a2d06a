/**
 * A command run to its end for its output (the disk watch's `du`), by whichever process runs it:
 * the daemon, or its harness launcher's helper, which node runs by itself, so this file imports
 * node's own modules only.
 */
import { execFile } from "node:child_process";

/** A command run to its end, with a deadline and a cap on its output. */
export interface Command {
  file: string;
  args: string[];
  timeoutMs: number;
  maxBytes: number;
}

/** Runs a command to its end: its stdout, and what failed if it did (`du` exits 1 when a file vanished mid-walk). */
export type CommandRunner = (command: Command) => Promise<{ stdout: string; error?: Error }>;

/** `CommandRunner` by this process's own `execFile`. */
export const execCommand: CommandRunner = ({ file, args, timeoutMs, maxBytes }) =>
  new Promise((resolve) =>
    execFile(file, args, { timeout: timeoutMs, maxBuffer: maxBytes, encoding: "utf8" }, (err, stdout) =>
      resolve({ stdout, ...(err ? { error: err } : {}) }),
    ),
  );
