import assert from "node:assert/strict";
import type Docker from "dockerode";
import { loadConfig } from "../../src/config.ts";
import { openClusterEngines } from "../../src/sandbox/cluster/cluster-engines.ts";
import { createClusterRuntime } from "../../src/sandbox/cluster/cluster-runtime.ts";
import type { ClusterSettings } from "../../src/sandbox/cluster/cluster-settings.ts";
import { serviceNameOf } from "../../src/sandbox/cluster/sandbox-service.ts";
import { currentTask } from "../../src/sandbox/cluster/sandbox-tasks.ts";
import { ownerIdOf } from "../../src/sandbox/docker/labels.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { clusterContainerCommand, clusterImageTag } from "../../src/sandbox/stream/cluster-image.ts";

/** The test cluster's settings, from the exports of `scripts/test-cluster.sh up`; undefined when it is not up. */
export function clusterSettingsFromEnv(): ClusterSettings | undefined {
  if (!process.env.SWARM_CLUSTER_MANAGER) return undefined;
  return loadConfig({ ...process.env, SWARM_RUNTIME: "cluster" }).cluster;
}

/** The cluster runtime on `dataDir` as the daemon makes it (quiet unless SWARM_TEST_LOG is set). */
export function createTestClusterRuntime(
  dataDir: string,
  overrides: Partial<ClusterSettings> = {},
): SandboxRuntime & { stop(): void } {
  const settings = clusterSettingsFromEnv();
  if (!settings) throw new Error("the test cluster is not up: run under `make test-cluster`");
  return createClusterRuntime({
    dataDir,
    settings: { ...settings, ...overrides },
    image: clusterImageTag(),
    command: clusterContainerCommand(),
    log: process.env.SWARM_TEST_LOG ? (message) => console.error(`[cluster] ${message}`) : () => undefined,
  });
}

/** The sandbox's container: its node's engine and id, found through the manager. */
export async function sandboxContainer(
  dataDir: string,
  sandboxId: string,
): Promise<{ docker: Docker; containerId: string; nodeId: string }> {
  const settings = clusterSettingsFromEnv()!;
  const engines = openClusterEngines(settings);
  const task = await currentTask(engines.manager, serviceNameOf(ownerIdOf(dataDir), sandboxId));
  assert.ok(task?.nodeId && task.containerId, `sandbox ${sandboxId} has no running task (${task?.state})`);
  return { docker: engines.node(task.nodeId), containerId: task.containerId, nodeId: task.nodeId };
}

/** Run a command in the sandbox's container as `user` (the agent's 65532 by default); its output and exit code. */
export async function execIn(
  dataDir: string,
  sandboxId: string,
  cmd: string[],
  user = "65532:65532",
): Promise<{ output: string; code: number }> {
  const { docker, containerId } = await sandboxContainer(dataDir, sandboxId);
  const exec = await docker
    .getContainer(containerId)
    .exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  const out = new (await import("node:stream")).PassThrough();
  out.on("data", (c: Buffer) => chunks.push(c));
  docker.modem.demuxStream(stream, out, out);
  await new Promise<void>((resolve) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
  });
  const { ExitCode } = await exec.inspect();
  return { output: Buffer.concat(chunks).toString("utf8"), code: ExitCode ?? -1 };
}

/**
 * A file of the sandbox's /work, read through its node's engine as an archive (undefined when it
 * is not there): that works on a frozen container too, where an exec would not.
 */
export async function readWork(dataDir: string, sandboxId: string, file: string): Promise<string | undefined> {
  const { docker, containerId } = await sandboxContainer(dataDir, sandboxId);
  let archive: NodeJS.ReadableStream;
  try {
    archive = (await docker.getContainer(containerId).getArchive({ path: `/work/${file}` })) as NodeJS.ReadableStream;
  } catch {
    return undefined;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of archive as AsyncIterable<Buffer>) chunks.push(chunk);
  const tar = Buffer.concat(chunks);
  // One file: a 512-byte header whose size field is octal at 124, then its bytes.
  const size = Number.parseInt(tar.subarray(124, 136).toString("latin1").replace(/\0.*$/, "").trim(), 8);
  return tar.subarray(512, 512 + size).toString("utf8");
}

/**
 * Services, containers and volumes labelled with the data folder's owner (and `extraLabels`) that
 * are still on the manager and the nodes. A closed sandbox's container and volumes go shortly after
 * its service (the node's engine removes them), so each node is looked at for up to 20 s.
 */
export async function clusterLeftovers(dataDir: string, extraLabels: string[] = []): Promise<string[]> {
  const settings = clusterSettingsFromEnv()!;
  const engines = openClusterEngines(settings);
  const label = [`swarmd.owner=${ownerIdOf(dataDir)}`, ...extraLabels];
  const found: string[] = [];
  for (const s of await engines.manager.listServices({ filters: { label } })) found.push(`service ${s.Spec?.Name}`);
  const deadline = Date.now() + 20_000;
  for (const nodeId of Object.keys(settings.nodes)) {
    const node = engines.node(nodeId);
    for (;;) {
      const containers = await node.listContainers({ all: true, filters: { label } });
      const { Volumes } = await node.listVolumes({ filters: { label } });
      const left = [
        ...containers.map(
          (c) => `container ${c.Names.join(",")} (${c.Labels["swarmd.helper"] ?? "sandbox"}) on ${nodeId}`,
        ),
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
