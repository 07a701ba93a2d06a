import { SessionManager } from "@mariozechner/pi-coding-agent";
import { errorMessage, SwarmError } from "../../errors.ts";
import { copyForkBranch } from "../../harness/fork-session.ts";
import { dropMemoryControl, openMemoryControl } from "../../harness/memory-control.ts";
import { assertInputNames } from "../input-names.ts";
import { localNode } from "../local-node.ts";
import { DEFAULT_SANDBOX_LIMITS, type ProvisionRequest, type SandboxInfo, type SandboxRuntime } from "../runtime.ts";
import { bytesWritten, overDiskLimit } from "../work-tree.ts";
import { createFreezeGate } from "./freeze-gate.ts";
import { startSandboxHarness } from "./harness-start.ts";
import { createMemoryEventLog } from "./memory-event-log.ts";
import { applyMemoryChanges, memoryTree, workBytes } from "./memory-tree.ts";
import { emptyFiles, forkFiles, WORK_DIR, writeInputFiles } from "./sandbox-files.ts";
import {
  controlDirOf,
  createSandboxTable,
  infoOf,
  isSandboxId,
  liveSandbox,
  type MemorySandbox,
  ownedSandbox,
  type SandboxTable,
} from "./sandbox-table.ts";

export interface MemoryRuntimeOptions {
  /** The sandboxes of an earlier runtime (its `table`) to take over, as a restarted service does. */
  table?: SandboxTable;
  /** How long a harness takes to start (default 0), for a caller that wants a start in flight. */
  startDelayMs?: number;
}

export interface MemoryRuntime extends SandboxRuntime {
  readonly kind: "simulated";
  readonly table: SandboxTable;
  /** Close every sandbox. */
  destroy(): Promise<void>;
}

/**
 * The simulated runtime (`SWARM_RUNTIME=simulated`): sandboxes as records in this process, files
 * in memory, the harness's real code (pi session, connection server, host calls) run in-process
 * with bash interpreted by just-bash, freezing as a gate on everything the harness does. No file,
 * no process and no socket: connections to a harness and to its model gateway are streams made in
 * this process, and the control folder is a map (`MemoryControl`). Nothing is isolated: it is for
 * tests and simulations, whose agents are scripted.
 */
export function createMemoryRuntime(options: MemoryRuntimeOptions = {}): MemoryRuntime {
  const table = options.table ?? createSandboxTable();
  const { sandboxes, lock } = table;
  const controlDir = (sandboxId: string) => controlDirOf(table, sandboxId);

  /** Record a new sandbox holding `files` once nothing can fail any more (an abort leaves nothing). */
  const add = (
    req: ProvisionRequest,
    files: ReturnType<typeof emptyFiles>,
    signal: AbortSignal,
    session?: SessionManager,
  ): SandboxInfo => {
    signal.throwIfAborted();
    if (sandboxes.has(req.sandboxId)) throw new SwarmError("SANDBOX_EXISTS", `sandbox ${req.sandboxId} already exists`);
    if (!isSandboxId(req.sandboxId))
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `sandbox id ${JSON.stringify(req.sandboxId)} is not a UUID`);
    // Its control folder exists from now on, as on every runtime (the daemon serves its model socket there).
    openMemoryControl(controlDir(req.sandboxId));
    const sandbox: MemorySandbox = {
      sandboxId: req.sandboxId,
      runId: req.runId,
      agentId: req.agentId,
      spec: req.spec,
      env: req.env ?? {},
      limits: req.limits ?? DEFAULT_SANDBOX_LIMITS,
      files,
      gate: createFreezeGate(),
      log: createMemoryEventLog(),
      hibernated: false,
      gone: false,
      ...(req.fork ? { fork: req.fork } : {}),
      ...(session ? { session } : {}),
    };
    sandboxes.set(req.sandboxId, sandbox);
    return infoOf(sandbox);
  };

  const runtime: MemoryRuntime = {
    kind: "simulated",
    // The agent's tools work on in-memory files; the harness's spec is not among them.
    harnessOutOfReach: true,
    table,

    async provision(req, signal) {
      return add(req, emptyFiles(), signal);
    },

    async fork(parentSandboxId, req, signal) {
      signal.throwIfAborted();
      if (req.fork) {
        const { fork } = req;
        const base = table.bases.get(fork.baseId);
        if (!base) throw new SwarmError("SANDBOX_PROVISION_FAILED", `fork point ${fork.baseId} does not exist`);
        const session = SessionManager.inMemory(WORK_DIR);
        if (base.session) copyForkBranch(base.session, session, fork);
        return add(req, await forkFiles(base.files), signal, session);
      }
      const parent = liveSandbox(table, parentSandboxId);
      const files = await forkFiles(parent.files).catch((err: unknown) => {
        throw new SwarmError(
          "SANDBOX_PROVISION_FAILED",
          `copying the files of ${parentSandboxId}: ${errorMessage(err)}`,
          { cause: err },
        );
      });
      return add(req, files, signal);
    },

    // The copy is made with the sandbox's gate shut, so no tool step of its harness lands halfway.
    snapshot: (sandboxId, baseId, runId, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        if (table.bases.has(baseId)) return;
        const sandbox = liveSandbox(table, sandboxId);
        const shut = sandbox.harness !== undefined && !sandbox.gate.frozen;
        if (shut) sandbox.gate.freeze();
        try {
          const files = await forkFiles(sandbox.files);
          const session = sandbox.session ? structuredClone(sandbox.session.getBranch()) : null;
          table.bases.set(baseId, { runId, files, session });
        } finally {
          if (shut) sandbox.gate.thaw();
        }
      }),

    async openTree(ref, signal) {
      signal.throwIfAborted();
      const files =
        "baseId" in ref
          ? table.bases.get(ref.baseId)?.files
          : (sandboxes.get(ref.sandboxId)?.files ?? table.kept.get(ref.sandboxId)?.files);
      if (!files) throw new SwarmError("SANDBOX_NOT_FOUND", `no tree ${JSON.stringify(ref)}`);
      return memoryTree(files);
    },

    applyChanges: (sandboxId, changes, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        const sandbox = liveSandbox(table, sandboxId);
        const limitBytes = sandbox.limits.diskMiB * 1024 * 1024;
        const bytes = (await workBytes(sandbox.files)) + bytesWritten(changes);
        if (bytes > limitBytes) throw overDiskLimit(sandboxId, bytes, limitBytes);
        const shut = sandbox.harness !== undefined && !sandbox.gate.frozen;
        if (shut) sandbox.gate.freeze();
        try {
          await applyMemoryChanges(sandbox.files, changes);
        } finally {
          if (shut) sandbox.gate.thaw();
        }
      }),

    async dropRun(runId, signal) {
      signal.throwIfAborted();
      for (const [id, base] of table.bases) if (base.runId === runId) table.bases.delete(id);
      for (const [id, kept] of table.kept) if (kept.runId === runId) table.kept.delete(id);
    },

    async writeInputs(sandboxId, files, signal) {
      signal.throwIfAborted();
      assertInputNames(Object.keys(files));
      await writeInputFiles(ownedSandbox(table, sandboxId).files, files);
    },

    startHarness: (sandboxId, signal) =>
      lock(sandboxId, () => startSandboxHarness(table, sandboxId, options.startDelayMs ?? 0, signal)),

    // The harness ends; its files, event log and pi session stay in the record for the next start.
    hibernate: (sandboxId, signal) =>
      lock(sandboxId, async () => {
        signal.throwIfAborted();
        const sandbox = liveSandbox(table, sandboxId);
        const harness = sandbox.harness;
        if (!harness) return;
        // As on every runtime: a paused agent is not hibernated (ending the harness opens its gate).
        if (sandbox.gate.frozen)
          throw new SwarmError("SANDBOX_FROZEN", `sandbox ${sandboxId} is frozen: a paused agent is not hibernated`);
        sandbox.harness = undefined;
        sandbox.hibernated = true;
        await harness.kill();
      }),

    async connect(sandboxId, signal) {
      signal.throwIfAborted();
      const harness = sandboxes.get(sandboxId)?.harness;
      if (!harness) throw new SwarmError("HARNESS_UNREACHABLE", `sandbox ${sandboxId} has no harness running`);
      return harness.connect();
    },

    // A sandbox whose harness never started (or hibernates) has nothing to suspend (as with the process runtime).
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
        // A fork child's changes can be compared and adopted after it ended.
        if (sandbox.fork) table.kept.set(sandboxId, { runId: sandbox.runId, files: sandbox.files });
        await sandbox.harness?.kill();
        dropMemoryControl(controlDir(sandboxId));
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

    async nodes(signal) {
      signal.throwIfAborted();
      return [localNode([...sandboxes.values()].filter((s) => !s.gone).map((s) => s.limits))];
    },

    controlDir,

    async destroy() {
      const signal = new AbortController().signal;
      await Promise.all([...sandboxes.keys()].map((sandboxId) => runtime.close(sandboxId, signal)));
    },
  };
  return runtime;
}
