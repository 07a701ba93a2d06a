import { mkdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, SwarmError } from "../../errors.ts";
import { assertInputNames } from "../input-names.ts";
import type { ProvisionRequest, SandboxInfo, SandboxRuntime } from "../runtime.ts";
import { connectSocket } from "../socket-connect.ts";
import { createFreezeGate } from "./freeze-gate.ts";
import { startSandboxHarness } from "./harness-start.ts";
import { RELAY_SOCKET } from "./memory-harness.ts";
import { emptyFiles, forkFiles, writeInputFiles } from "./sandbox-files.ts";
import { controlDirOf, createSandboxTable, infoOf, isSandboxId, liveSandbox, ownedSandbox, type MemorySandbox, type SandboxTable } from "./sandbox-table.ts";

export interface MemoryRuntimeOptions {
  /** The sandboxes of an earlier runtime (its `table`) to take over, as a restarted service does. */
  table?: SandboxTable;
  /** How long a harness takes to start (default 0), for a caller that wants a start in flight. */
  startDelayMs?: number;
}

export interface MemoryRuntime extends SandboxRuntime {
  readonly kind: "memory";
  readonly table: SandboxTable;
  /** Close every sandbox and remove the folder of their sockets. */
  destroy(): Promise<void>;
}

/**
 * Sandboxes as records in this process: files in memory, the harness's real code (pi session,
 * socket server, host calls) run in-process with bash interpreted by just-bash, freezing as a gate
 * on everything the harness does. Only the Unix sockets touch the disk. Nothing is isolated: it is
 * for tests and simulations, whose agents are scripted.
 */
export function createMemoryRuntime(options: MemoryRuntimeOptions = {}): MemoryRuntime {
  const table = options.table ?? createSandboxTable();
  const { sandboxes, lock } = table;
  const controlDir = (sandboxId: string) => controlDirOf(table, sandboxId);

  /** Record a new sandbox holding `files` once nothing can fail any more (an abort leaves nothing). */
  const add = (req: ProvisionRequest, files: ReturnType<typeof emptyFiles>, signal: AbortSignal): SandboxInfo => {
    signal.throwIfAborted();
    if (sandboxes.has(req.sandboxId)) throw new SwarmError("SANDBOX_EXISTS", `sandbox ${req.sandboxId} already exists`);
    if (!isSandboxId(req.sandboxId)) throw new SwarmError("SANDBOX_PROVISION_FAILED", `sandbox id ${JSON.stringify(req.sandboxId)} is not a UUID`);
    const sandbox: MemorySandbox = { sandboxId: req.sandboxId, runId: req.runId, agentId: req.agentId, spec: req.spec, env: req.env ?? {}, files, gate: createFreezeGate(), gone: false };
    sandboxes.set(req.sandboxId, sandbox);
    // Its control folder exists from now on, as on every runtime (the daemon serves its model socket there).
    mkdirSync(controlDir(req.sandboxId), { recursive: true });
    return infoOf(sandbox);
  };

  const runtime: MemoryRuntime = {
    kind: "memory",
    table,

    async provision(req, signal) {
      return add(req, emptyFiles(), signal);
    },

    async fork(parentSandboxId, req, signal) {
      signal.throwIfAborted();
      const parent = liveSandbox(table, parentSandboxId);
      const files = await forkFiles(parent.files).catch((err: unknown) => {
        throw new SwarmError("SANDBOX_PROVISION_FAILED", `copying the files of ${parentSandboxId}: ${errorMessage(err)}`, { cause: err });
      });
      return add(req, files, signal);
    },

    async writeInputs(sandboxId, files, signal) {
      signal.throwIfAborted();
      assertInputNames(Object.keys(files));
      await writeInputFiles(ownedSandbox(table, sandboxId).files, files);
    },

    startHarness: (sandboxId, signal) => lock(sandboxId, () => startSandboxHarness(table, sandboxId, options.startDelayMs ?? 0, signal)),

    async connect(sandboxId, signal) {
      signal.throwIfAborted();
      if (!sandboxes.get(sandboxId)?.harness) throw new SwarmError("HARNESS_UNREACHABLE", `sandbox ${sandboxId} has no harness running`);
      return connectSocket(join(controlDir(sandboxId), RELAY_SOCKET), signal);
    },

    // A sandbox whose harness never started has nothing to suspend (as with the process runtime).
    freeze: (sandboxId, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        const sandbox = liveSandbox(table, sandboxId);
        if (sandbox.harness) sandbox.gate.freeze();
      }),

    thaw: (sandboxId, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        const sandbox = liveSandbox(table, sandboxId);
        if (sandbox.harness) sandbox.gate.thaw();
      }),

    close: (sandboxId, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        const sandbox = sandboxes.get(sandboxId);
        if (!sandbox) return;
        sandboxes.delete(sandboxId);
        await sandbox.harness?.kill();
        await rm(controlDir(sandboxId), { recursive: true, force: true });
      }),

    async inspect(sandboxId, signal) {
      signal.throwIfAborted();
      const sandbox = sandboxes.get(sandboxId);
      return sandbox && infoOf(sandbox);
    },

    async list(signal) {
      signal.throwIfAborted();
      return [...sandboxes.values()].map(infoOf);
    },

    controlDir,

    async destroy() {
      const signal = new AbortController().signal;
      await Promise.all([...sandboxes.keys()].map((sandboxId) => runtime.close(sandboxId, signal)));
      await rm(table.root, { recursive: true, force: true });
    },
  };
  return runtime;
}
