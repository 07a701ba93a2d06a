import type { ChildProcess } from "node:child_process";
import { type DetachedLaunch, howItEnded, spawnDetached } from "./detached-spawn.ts";
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
  const launch: DetachedLaunch = {
    file,
    args,
    env: command.hostEnv,
    cwd: command.cwd,
    output: outputFile,
    ...(command.fdArgs ? { fdArgs: command.fdArgs } : {}),
  };
  if (launcher && !command.awaitsNetwork) return launcher.launch(launch);
  // NET_INFO_FD, NET_BLOCK_FD and NET_HOLD_FD (4, 5, 6) follow ARGS_FD; sandbox-network.ts uses them.
  const child = spawnDetached({ ...launch, extraPipes: command.awaitsNetwork ? 3 : 0 });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  child.unref();
  if (child.pid === undefined) throw new Error("the harness process has no pid");
  return { pid: child.pid, exited: () => exitOf(child), child };
}

/** How the child ended (`exited with code 1`, `was killed by SIGKILL`), or `undefined` while it runs. */
function exitOf(child: ChildProcess): string | undefined {
  return child.exitCode === null && child.signalCode === null
    ? undefined
    : howItEnded(child.exitCode, child.signalCode);
}
