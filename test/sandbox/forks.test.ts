/**
 * The fork contract (fork-contract.ts) on the simulated, process and docker runtimes: fork points,
 * fork children from them, their trees, changes applied, and a run's drop. The cluster runtime runs
 * it in test/cluster/.
 */
import { realpathSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { whenDocker } from "../support/docker-engine.ts";
import { mountsUnder, mountTypeAt, runForkContract } from "./fork-contract.ts";

const quiet = { info: () => undefined, warn: () => undefined };

runForkContract("simulated", async () => {
  const runtime = createMemoryRuntime();
  return {
    runtime,
    reopen: async () => createMemoryRuntime({ table: runtime.table }),
    cleanup: () => runtime.destroy(),
    workDir: () => "/nowhere",
  };
});

/** A host runtime (its sandboxes' folders under `<dataDir>/sandboxes`) on a data folder of its own. */
const hostSetup = (prefix: string, make: (dataDir: string) => SandboxRuntime) => async () => {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
  return {
    runtime: make(dataDir),
    reopen: async () => make(dataDir),
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
    workDir: (id: string) => join(dataDir, "sandboxes", id, "work"),
    mounts: () => mountsUnder(dataDir),
    workMount: (id: string) => mountTypeAt(realpathSync(join(dataDir, "sandboxes", id, "work"))),
  };
};

runForkContract(
  "process",
  hostSetup("swarmd-forks-", (dataDir) => createProcessRuntime({ dataDir, logger: quiet })),
);

await whenDocker("docker runtime forks", () =>
  runForkContract(
    "docker",
    hostSetup("swarmd-forks-docker-", (dataDir) => createDockerRuntime({ dataDir })),
  ),
);
