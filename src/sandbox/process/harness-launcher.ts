import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { HarnessCommand } from "./harness-command.ts";

/**
 * Start the harness detached: its own session (so no signal aimed at the service's process group
 * reaches it), output to `outputFile`, and unreferenced, so it outlives the service.
 */
export async function spawnDetached(command: HarnessCommand, prefix: string[], outputFile: string): Promise<ChildProcess> {
  const [file, ...args] = [...prefix, ...command.argv];
  if (file === undefined) throw new Error("empty harness command");
  const output = openSync(outputFile, "w", 0o600);
  try {
    const child = spawn(file, args, { detached: true, stdio: ["ignore", output, output], env: command.env, cwd: command.cwd });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    child.unref();
    return child;
  } finally {
    closeSync(output);
  }
}

/** How the child ended (`exited with code 1`, `was killed by SIGKILL`), or `undefined` while it runs. */
export function exitOf(child: ChildProcess): string | undefined {
  if (child.exitCode !== null) return `exited with code ${child.exitCode}`;
  if (child.signalCode !== null) return `was killed by ${child.signalCode}`;
  return undefined;
}
