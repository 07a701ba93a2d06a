import { setTimeout as delay } from "node:timers/promises";
import {
  type BashOperations,
  createBashToolDefinition,
  createEditToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
  type ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import { Bash, type InMemoryFs } from "just-bash";
import type { FreezeGate } from "./freeze-gate.ts";
import { WORK_DIR } from "./sandbox-files.ts";

/**
 * pi's own bash, read, write and edit tools (same arguments, output, truncation and errors as in
 * a real sandbox) acting on the sandbox's in-memory files: bash runs in just-bash, a bash
 * interpreter with no processes (no background jobs: `cmd &` runs to its end). Every operation
 * waits at the freeze gate, and so does each sleep inside a command.
 */
export function virtualTools(files: InMemoryFs, gate: FreezeGate, env: Record<string, string>): ToolDefinition[] {
  const readFile = async (path: string) => {
    await gate.passed();
    return Buffer.from(await files.readFileBuffer(path));
  };
  const writeFile = async (path: string, content: string) => {
    await gate.passed();
    await files.writeFile(path, content);
  };
  const access = async (path: string) => {
    await gate.passed();
    if (!(await files.exists(path))) throw new Error(`ENOENT: no such file or directory, access '${path}'`);
  };
  const mkdir = async (dir: string) => {
    await gate.passed();
    await files.mkdir(dir, { recursive: true });
  };
  return [
    createBashToolDefinition(WORK_DIR, { operations: bashOperations(files, gate, env) }),
    createReadToolDefinition(WORK_DIR, { operations: { readFile, access } }),
    createWriteToolDefinition(WORK_DIR, { operations: { writeFile, mkdir } }),
    createEditToolDefinition(WORK_DIR, { operations: { readFile, writeFile, access } }),
  ] as unknown as ToolDefinition[];
}

/**
 * One fresh shell per command, as pi starts one bash per call: nothing but files carries over.
 * The environment is the spec's alone (pi would hand over the daemon's own, which never enters a
 * sandbox). Rejections use the words pi's bash tool turns into "Command aborted" and "timed out".
 */
function bashOperations(files: InMemoryFs, gate: FreezeGate, env: Record<string, string>): BashOperations {
  return {
    async exec(command, cwd, { onData, signal, timeout }) {
      const deadline = timeout !== undefined && timeout > 0 ? AbortSignal.timeout(timeout * 1000) : undefined;
      const stop = AbortSignal.any([signal, deadline].filter((s): s is AbortSignal => s !== undefined));
      const failure = () => new Error(signal?.aborted ? "aborted" : `timeout:${timeout}`);
      await gate.passed();
      if (stop.aborted) throw failure();
      // A frozen process's clock runs on (its sleep's timer expires), but it wakes only once thawed.
      const sleep = async (ms: number) => {
        await delay(ms, undefined, { signal: stop }).catch(() => stop.throwIfAborted());
        await gate.passed();
      };
      // defenseInDepth patches globals such as setTimeout while a script runs: in a process shared
      // with the daemon and every other sandbox, that would reach far beyond this one command.
      const shell = new Bash({ fs: files, cwd, env, defenseInDepth: false, sleep });
      const result = await shell.exec(command, { signal: stop });
      await gate.passed();
      if (stop.aborted) throw failure();
      if (result.stdout) onData(Buffer.from(result.stdout));
      if (result.stderr) onData(Buffer.from(result.stderr));
      return { exitCode: result.exitCode };
    },
  };
}
