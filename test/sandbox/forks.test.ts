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

runForkContract("process", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "swarmd-forks-"));
  const make = () => createProcessRuntime({ dataDir, logger: quiet });
  return {
    runtime: make(),
    reopen: async () => make(),
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
    workDir: (id) => join(dataDir, "sandboxes", id, "work"),
    mounts: () => mountsUnder(dataDir),
    workMount: (id) => mountTypeAt(realpathSync(join(dataDir, "sandboxes", id, "work"))),
  };
});

await whenDocker("docker runtime forks", () =>
  runForkContract("docker", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "swarmd-forks-docker-"));
    const make = () => createDockerRuntime({ dataDir });
    return {
      runtime: make(),
      reopen: async () => make(),
      cleanup: () => rm(dataDir, { recursive: true, force: true }),
      workDir: (id) => join(dataDir, "sandboxes", id, "work"),
      mounts: () => mountsUnder(dataDir),
      workMount: (id) => mountTypeAt(realpathSync(join(dataDir, "sandboxes", id, "work"))),
    };
  }),
);
