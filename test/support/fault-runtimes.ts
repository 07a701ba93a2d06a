import { describe } from "node:test";
import Docker from "dockerode";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import { LABEL } from "../../src/sandbox/docker/labels.ts";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { sandboxProcesses } from "./daemon-process.ts";
import { dockerMissing, dockerUnusable } from "./docker-engine.ts";

export type FaultRuntimeKind = "process" | "docker";

/**
 * What a fault test (test/faults/) needs of the runtime under a daemon process it kills: the
 * daemon's environment that selects it, a second view of the sandboxes to inspect what the daemon
 * left, and what is left of them on the host.
 */
export interface FaultRuntime {
  readonly kind: FaultRuntimeKind;
  /** The daemon's environment for this runtime: `spawnDaemon(dataDir, { ...rt.env, ... })`. */
  readonly env: Readonly<Record<string, string>>;
  /** A runtime on the daemon's data folder: the same sandboxes, as a restarted daemon finds them. */
  open(dataDir: string): SandboxRuntime;
  /** What still runs of these sandboxes on the host (processes, containers), one line each; none is `[]`. */
  leftovers(sandboxIds: Iterable<string>): Promise<string[]>;
}

const quiet = { info: () => undefined, warn: () => undefined };

const RUNTIMES: Record<FaultRuntimeKind, FaultRuntime> = {
  process: {
    kind: "process",
    env: { SWARM_RUNTIME: "process" },
    open: (dataDir) => createProcessRuntime({ dataDir, logger: quiet }),
    leftovers: async (sandboxIds) => sandboxProcesses(sandboxIds).map((pid) => `process ${pid}`),
  },
  docker: {
    kind: "docker",
    env: { SWARM_RUNTIME: "docker" },
    open: (dataDir) => createDockerRuntime({ dataDir }),
    async leftovers(sandboxIds) {
      const docker = new Docker();
      const found: string[] = [];
      for (const sandboxId of sandboxIds) {
        const filters = { label: [`${LABEL.sandbox}=${sandboxId}`] };
        for (const c of await docker.listContainers({ all: true, filters }))
          found.push(`container ${c.Names.join(",")} (${c.State})`);
      }
      return found;
    },
  },
};

/**
 * The runtimes fault tests run on: `SWARM_FAULT_RUNTIMES` (comma-separated), by default both
 * `process` and `docker`.
 */
export function faultRuntimeKinds(): FaultRuntimeKind[] {
  const named = (process.env.SWARM_FAULT_RUNTIMES ?? "process,docker").split(",").map((k) => k.trim());
  for (const kind of named)
    if (!(kind in RUNTIMES)) throw new Error(`SWARM_FAULT_RUNTIMES: ${kind} is not process or docker`);
  return named as FaultRuntimeKind[];
}

/**
 * Declare a fault suite once per fault runtime, as `<name> (<kind> runtime)`: `declare` states its
 * tests for one runtime. The runtimes' suites run at the same time (each its own data folder,
 * daemon and sandboxes; their tests one after another), so the file takes as long as its slowest
 * runtime, not their sum. Docker needs an engine and the sandbox image: without them its suite is
 * one skipped test saying why, or, under CI=true, one failing test (as `whenDocker`).
 *
 *   await onFaultRuntimes("restart after SIGKILL", (rt) => {
 *     it("...", async () => { const d = await spawnDaemon(dataDir, rt.env); ... });
 *   });
 */
export async function onFaultRuntimes(name: string, declare: (rt: FaultRuntime) => void): Promise<void> {
  const kinds = faultRuntimeKinds();
  const dockerReason = kinds.includes("docker") ? await dockerUnusable() : undefined;
  describe(name, { concurrency: true }, () => {
    for (const kind of kinds) {
      const title = `${name} (${kind} runtime)`;
      if (kind === "docker" && dockerReason !== undefined) dockerMissing(title, dockerReason);
      else describe(title, { concurrency: false }, () => declare(RUNTIMES[kind]));
    }
  });
}
