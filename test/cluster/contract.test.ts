/**
 * The sandbox contract (test/sandbox/contract.ts) on the cluster runtime, over the test cluster of
 * `make test-cluster` (three Docker engines in network namespaces, one swarm).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openClusterEngines } from "../../src/sandbox/cluster/cluster-engines.ts";
import { ownerIdOf } from "../../src/sandbox/docker/labels.ts";
import { runSandboxContract, type SandboxContractSetup } from "../sandbox/contract.ts";
import { clusterSettingsFromEnv, createTestClusterRuntime, readWork } from "../support/cluster-runtime.ts";
import { whenCluster } from "../support/test-cluster.ts";

/** Services, containers and volumes a closed sandbox must not leave, on the manager and every node. */
async function clusterLeaks(dataDir: string, sandboxId: string): Promise<string[]> {
  const settings = clusterSettingsFromEnv()!;
  const engines = openClusterEngines(settings);
  const label = [`swarmd.owner=${ownerIdOf(dataDir)}`, `swarmd.sandbox=${sandboxId}`];
  const found: string[] = [];
  for (const s of await engines.manager.listServices({ filters: { label } })) found.push(`service ${s.Spec?.Name}`);
  // Its container and volumes go shortly after its service: the node's engine removes them.
  const deadline = Date.now() + 20_000;
  for (const nodeId of Object.keys(settings.nodes)) {
    const node = engines.node(nodeId);
    for (;;) {
      const containers = await node.listContainers({ all: true, filters: { label } });
      const { Volumes } = await node.listVolumes({ filters: { label } });
      const left = [
        ...containers.map((c) => `container ${c.Names.join(",")} on ${nodeId}`),
        ...(Volumes ?? []).map((v) => `volume ${v.Name} on ${nodeId}`),
      ];
      if (left.length === 0 || Date.now() > deadline) {
        found.push(...left);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return found;
}

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
