/**
 * The sandbox contract (test/sandbox/contract.ts) on the cluster runtime, over the test cluster of
 * `make test-cluster` (three Docker engines in network namespaces, one swarm).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runSandboxContract, type SandboxContractSetup } from "../sandbox/contract.ts";
import {
  clusterLeftovers,
  clusterSettingsFromEnv,
  createTestClusterRuntime,
  readWork,
} from "../support/cluster-runtime.ts";
import { whenCluster } from "../support/test-cluster.ts";

/** Services, containers and volumes a closed sandbox must not leave, on the manager and every node. */
const clusterLeaks = (dataDir: string, sandboxId: string) => clusterLeftovers(dataDir, [`swarmd.sandbox=${sandboxId}`]);

await whenCluster("cluster runtime contract", () => {
  runSandboxContract("cluster (Docker Swarm, 3 nodes)", async (): Promise<SandboxContractSetup> => {
    const dataDir = await mkdtemp(join(tmpdir(), "swarmd-cluster-"));
    const made: Array<{ stop(): void }> = [];
    const make = () => {
      const runtime = createTestClusterRuntime(dataDir);
      made.push(runtime);
      return runtime;
    };
    return {
      runtime: make(),
      reopen: async () => make(),
      cleanup: async () => {
        for (const runtime of made) runtime.stop();
        await rm(dataDir, { recursive: true, force: true });
      },
      leaks: (sandboxId) => clusterLeaks(dataDir, sandboxId),
      workDir: () => "/nonexistent",
      readWork: (sandboxId, file) => readWork(dataDir, sandboxId, file),
      multiNode: { reserve: clusterSettingsFromEnv()!.reserve },
    };
  });
});
