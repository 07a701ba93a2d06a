import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { open } from "node:fs/promises";
import type { HarnessCommand } from "./harness-command.ts";
import { pollUntil } from "./poll.ts";
import { socketAccepts } from "../../harness/socket-probe.ts";

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

export interface WaitForSocketOptions {
  timeoutMs: number;
  signal: AbortSignal;
  outputFile: string;
}

/**
 * Resolve once the harness socket accepts a connection. Rejects as soon as the harness process
 * exits, or at the deadline, with the harness's own output in the message (that is where a bad
 * spec or a missing library shows).
 */
export async function waitForSocket(socketPath: string, child: ChildProcess, options: WaitForSocketOptions): Promise<void> {
  let exit: string | undefined;
  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    exit = code === null ? `was killed by ${signal ?? "a signal"}` : `exited with code ${code}`;
  };
  if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
  child.once("exit", onExit);
  try {
    await pollUntil(
      async () => {
        if (exit !== undefined) throw new Error(`the harness ${exit} before its socket accepted connections`);
        return (await socketAccepts(socketPath)) ? true : undefined;
      },
      { timeoutMs: options.timeoutMs, intervalMs: 50, signal: options.signal, what: "the harness socket to accept connections" },
    );
  } catch (err) {
    if (options.signal.aborted) throw options.signal.reason;
    const output = await tail(options.outputFile, 4096);
    throw new Error(`${err instanceof Error ? err.message : String(err)}; harness output:\n${output || "(none)"}`);
  } finally {
    child.off("exit", onExit);
  }
}

async function tail(path: string, bytes: number): Promise<string> {
  try {
    const handle = await open(path, "r");
    try {
      const { size } = await handle.stat();
      const start = Math.max(0, size - bytes);
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      return buffer.toString("utf8").trim();
    } finally {
      await handle.close();
    }
  } catch {
    return "";
  }
}
