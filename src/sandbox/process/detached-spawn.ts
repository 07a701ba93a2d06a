/**
 * How a harness's launch chain is started, by the daemon or by its launcher (launcher-main.ts, which
 * node runs by itself: node's own modules only here): detached in a session of its own (no signal
 * aimed at the starter's process group reaches it), its output to a file, `fdArgs` written
 * NUL-separated to `ARGS_FD` (bwrap's `--args`), never on a command line.
 */
import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Writable } from "node:stream";

/** The descriptor the launch hands bwrap its `fdArgs` on. */
export const ARGS_FD = 3;

export interface DetachedLaunch {
  file: string;
  args: string[];
  /** The launch processes' whole environment. */
  env: Record<string, string>;
  cwd: string;
  /** Where its stdout and stderr go (made, mode 0600). */
  output: string;
  fdArgs?: string[];
  /** Pipes on the descriptors after `ARGS_FD` (a networked sandbox's: see sandbox-network.ts). */
  extraPipes?: number;
}

/**
 * Start `launch`; its `spawn` or `error` event says whether it runs. Once it runs, `fdArgs` are
 * written and the pipe closed (a launch that dies before reading breaks the pipe: its exit tells).
 */
export function spawnDetached(launch: DetachedLaunch): ChildProcess {
  const output = openSync(launch.output, "w", 0o600);
  try {
    const stdio: Extract<StdioOptions, unknown[]> = ["ignore", output, output];
    if (launch.fdArgs) stdio.push("pipe", ...Array.from({ length: launch.extraPipes ?? 0 }, () => "pipe" as const));
    const child = spawn(launch.file, launch.args, { detached: true, stdio, env: launch.env, cwd: launch.cwd });
    child.once("spawn", () => {
      const pipe = child.stdio[ARGS_FD] as Writable | null | undefined;
      if (!launch.fdArgs || !pipe) return;
      pipe.on("error", () => undefined);
      pipe.end(launch.fdArgs.map((arg) => `${arg}\0`).join(""));
    });
    return child;
  } finally {
    closeSync(output);
  }
}

/** How a process ended, as a start's error says it: `exited with code 1`, `was killed by SIGKILL`. */
export function howItEnded(code: number | null, signal: string | null): string {
  return signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
}
