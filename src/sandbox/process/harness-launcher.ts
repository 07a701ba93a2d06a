import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Writable } from "node:stream";
import { ARGS_FD } from "./bubblewrap.ts";
import type { HarnessCommand } from "./harness-command.ts";
import type { Launched, Launcher } from "./launcher.ts";

/** A started harness: its pid, how it ended (see `exitOf`), and its process when this daemon spawned it itself. */
export interface StartedHarness extends Launched {
  /** Spawned by the daemon (a networked sandbox's: its network is set up over the child's pipes). */
  child?: ChildProcess;
}

/**
 * Start the harness detached: its own session (so no signal aimed at the service's process group
 * reaches it), output to `outputFile`, and unreferenced, so it outlives the service. The launch
 * processes get the command's fixed host environment; `fdArgs` go to bwrap through a pipe on
 * `ARGS_FD`, never on a command line. Through `launcher` unless the sandbox's network is set up
 * over the launch's pipes, which only a process the daemon spawned itself has.
 */
export async function startDetached(
  command: HarnessCommand,
  prefix: string[],
  outputFile: string,
  launcher: Launcher | undefined,
): Promise<StartedHarness> {
  const [file, ...args] = [...prefix, ...command.argv];
  if (file === undefined) throw new Error("empty harness command");
  if (launcher && !command.awaitsNetwork)
    return launcher.launch({
      file,
      args,
      env: command.hostEnv,
      cwd: command.cwd,
      output: outputFile,
      ...(command.fdArgs ? { fdArgs: command.fdArgs } : {}),
    });
  const child = await spawnDetached(file, args, command, outputFile);
  if (child.pid === undefined) throw new Error("the harness process has no pid");
  return { pid: child.pid, exited: () => exitOf(child), child };
}

async function spawnDetached(
  file: string,
  args: string[],
  command: HarnessCommand,
  outputFile: string,
): Promise<ChildProcess> {
  const output = openSync(outputFile, "w", 0o600);
  try {
    const stdio: Extract<StdioOptions, unknown[]> = command.fdArgs
      ? ["ignore", output, output, "pipe"]
      : ["ignore", output, output];
    // NET_INFO_FD, NET_BLOCK_FD and NET_HOLD_FD (4, 5, 6) follow ARGS_FD; sandbox-network.ts uses them.
    if (command.awaitsNetwork && command.fdArgs) stdio.push("pipe", "pipe", "pipe");
    const child = spawn(file, args, { detached: true, stdio, env: command.hostEnv, cwd: command.cwd });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    const pipe = child.stdio[ARGS_FD] as Writable | null | undefined;
    if (command.fdArgs && pipe) {
      // A launch that dies before reading leaves the pipe broken: its exit is reported by the caller.
      pipe.on("error", () => undefined);
      pipe.end(command.fdArgs.map((arg) => `${arg}\0`).join(""));
    }
    child.unref();
    return child;
  } finally {
    closeSync(output);
  }
}

/** How the child ended (`exited with code 1`, `was killed by SIGKILL`), or `undefined` while it runs. */
function exitOf(child: ChildProcess): string | undefined {
  if (child.exitCode !== null) return `exited with code ${child.exitCode}`;
  if (child.signalCode !== null) return `was killed by ${child.signalCode}`;
  return undefined;
}
