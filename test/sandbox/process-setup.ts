import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasEnvEntry, isAliveProc, listProcs, type ProcEntry } from "../../src/sandbox/process/proc-table.ts";
import {
  createProcessRuntime,
  type ProcessRuntime,
  type ProcessRuntimeOptions,
} from "../../src/sandbox/process/process-runtime.ts";
import { sandboxTag } from "../../src/sandbox/process/sandbox-tag.ts";
import type { SandboxContractSetup } from "./contract.ts";

const quiet = { info: () => undefined, warn: () => undefined };
// Freezer cgroups, and the limit cgroups of the v1 pids, memory and cpu hierarchies.
const CGROUP_BASES = ["swarmd", "unified/swarmd", "freezer/swarmd", "pids/swarmd", "memory/swarmd", "cpu/swarmd"].map(
  (dir) => `/sys/fs/cgroup/${dir}`,
);

/** Live processes tagged with the sandbox (SWARMD_SANDBOX in their environment). */
export async function taggedProcesses(sandboxId: string): Promise<ProcEntry[]> {
  const live = (await listProcs()).filter(isAliveProc);
  const tagged = await Promise.all(live.map((e) => hasEnvEntry(e.pid, sandboxTag(sandboxId))));
  return live.filter((_, i) => tagged[i]);
}

/** Live processes tagged with the sandbox, its folder, its cgroup: what a closed sandbox must not leave. */
export async function processLeaks(dataDir: string, sandboxId: string): Promise<string[]> {
  const leaks = (await taggedProcesses(sandboxId)).map((e) => `process ${e.pid} (${e.state})`);
  if (existsSync(join(dataDir, "sandboxes", sandboxId))) leaks.push("sandbox folder");
  for (const base of CGROUP_BASES) if (existsSync(join(base, sandboxId))) leaks.push(`cgroup ${join(base, sandboxId)}`);
  return leaks;
}

/** The contract suite's setup for the process runtime with these options, on a fresh data folder. */
export function processSetup(options: Omit<ProcessRuntimeOptions, "dataDir">): () => Promise<SandboxContractSetup> {
  return async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "swarmd-process-"));
    const made: ProcessRuntime[] = [];
    const make = () => {
      const runtime = createProcessRuntime({ dataDir, logger: quiet, ...options });
      made.push(runtime);
      return runtime;
    };
    return {
      runtime: make(),
      // A restarted service closes the pool of the one before; the old runtime object, still used by
      // the suite for its sandboxes, must not hand out pooled sandboxes the new one is closing.
      reopen: async () => {
        for (const runtime of made) await runtime.pool?.close();
        return make();
      },
      cleanup: async () => {
        // A runtime with a pool closes the sandboxes it made ahead.
        for (const runtime of made) await runtime.dispose();
        await rm(dataDir, { recursive: true, force: true });
      },
      leaks: (id) => processLeaks(dataDir, id),
      processes: async (id) => (await taggedProcesses(id)).map((e) => `process ${e.pid} (${e.state})`),
      workDir: (id) => join(dataDir, "sandboxes", id, "work"),
      startsAhead: (options.pool?.size ?? 0) > 0,
    };
  };
}
