/**
 * The cluster runtime on the test cluster (`scripts/test-cluster.sh up`, then `eval` its exports):
 * every figure is a ratio against a baseline measured in the same run.
 *
 * - provision of 30 sandboxes spread over 3 nodes vs all on 1 (the swarm places them; availability
 *   `pause` keeps the other nodes out for the baseline), 6 at a time;
 * - fork of a 100 MiB /work on the parent's node vs across nodes, vs a `docker cp` round trip of the
 *   same folder (out of the parent's container to the daemon's host, into the child's);
 * - freeze and thaw of a sandbox on a worker vs the local docker runtime on this machine's engine;
 * - 300 idle agents (harness started) over 3 nodes: how the swarm placed them, and the time.
 *
 *   eval "$(scripts/test-cluster.sh up)"; npx tsx bench/cluster.ts; scripts/test-cluster.sh down
 *
 * BENCH_CLUSTER_AGENTS sets the idle count (default 300), BENCH_CLUSTER_FORK_MIB the fork size (100).
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import PQueue from "p-queue";
import { createDockerRuntime } from "../src/sandbox/docker/docker-runtime.ts";
import type { ProvisionRequest, SandboxRuntime } from "../src/sandbox/runtime.ts";
import { createTestClusterRuntime, execIn, sandboxContainer } from "../test/support/cluster-runtime.ts";
import { clusterSettings, setAvailability } from "../test/support/test-cluster.ts";
import { fmtMs, fmtRatio, markdownTable, median, timed } from "./stats.ts";

const cluster = clusterSettings();
if (!cluster) {
  console.error('bench/cluster.ts: no test cluster: eval "$(scripts/test-cluster.sh up)" first');
  process.exit(2);
}
const ids = cluster.nodes.map((n) => n.id);
const [, worker] = ids as [string, string, string];
const IDLE = Number(process.env.BENCH_CLUSTER_AGENTS ?? 300);
const FORK_MIB = Number(process.env.BENCH_CLUSTER_FORK_MIB ?? 100);
const signal = () => AbortSignal.timeout(300_000);
const small = { pids: 64, memoryMiB: 256, cpus: 0.1, diskMiB: 1024, tmpMiB: 16 };
const request = (name: string): ProvisionRequest => ({
  sandboxId: randomUUID(),
  runId: "r_bench",
  agentId: `a_${name}`,
  spec: { name, script: [] },
  limits: small,
});

const dataDir = mkdtempSync(join(tmpdir(), "swarmd-bench-cluster-"));
const runtime = createTestClusterRuntime(dataDir);
const only = async (nodeIds: readonly string[]) => {
  for (const id of ids) await setAvailability(id, nodeIds.includes(id) ? "active" : "pause");
};
const closeAll = async (rt: SandboxRuntime) => {
  const queue = new PQueue({ concurrency: 8 });
  await Promise.all((await rt.list(signal())).map((s) => queue.add(() => rt.close(s.sandboxId, signal()))));
};

try {
  const rows: string[][] = [];

  // 1. 30 provisions on 3 nodes vs on 1.
  const provision30 = async (nodeIds: readonly string[]) => {
    await only(nodeIds);
    const queue = new PQueue({ concurrency: 6 });
    const { ms } = await timed(() =>
      Promise.all(Array.from({ length: 30 }, (_, i) => queue.add(() => runtime.provision(request(`p${i}`), signal())))),
    );
    await closeAll(runtime);
    return ms;
  };
  const oneNode = await provision30([worker]);
  const threeNodes = await provision30(ids);
  rows.push([
    "provision 30 sandboxes",
    `3 nodes ${fmtMs(threeNodes)}`,
    `1 node ${fmtMs(oneNode)}`,
    fmtRatio(threeNodes, oneNode),
  ]);

  // 2. Fork of a /work of FORK_MIB MiB: on the parent's node, across nodes, and a docker cp round trip.
  await only([worker]);
  const parent = request("parent");
  await runtime.provision(parent, signal());
  const write = await execIn(dataDir, parent.sandboxId, [
    "sh",
    "-c",
    `dd if=/dev/urandom of=/work/big bs=1M count=${FORK_MIB} 2>/dev/null && mkdir -p /work/src && for i in $(seq 1 200); do echo $i > /work/src/f$i; done && du -sm /work | cut -f1`,
  ]);
  if (write.code !== 0) throw new Error(`could not fill /work: ${write.output}`);
  const sameNode: number[] = [];
  const acrossNodes: number[] = [];
  const roundTrip: number[] = [];
  for (let rep = 0; rep < 3; rep++) {
    await only([worker]);
    sameNode.push((await timed(() => runtime.fork(parent.sandboxId, request(`same${rep}`), signal()))).ms);
    await only(ids.filter((id) => id !== worker));
    acrossNodes.push((await timed(() => runtime.fork(parent.sandboxId, request(`across${rep}`), signal()))).ms);
    // The baseline: `docker cp` out of the parent to this host and into a fresh sandbox, by the API the CLI uses.
    const target = request(`cp${rep}`);
    await runtime.provision(target, signal());
    const from = await sandboxContainer(dataDir, parent.sandboxId);
    const to = await sandboxContainer(dataDir, target.sandboxId);
    roundTrip.push(
      (
        await timed(async () => {
          const chunks: Buffer[] = [];
          const archive = (await from.docker
            .getContainer(from.containerId)
            .getArchive({ path: "/work/." })) as AsyncIterable<Buffer>;
          for await (const chunk of archive) chunks.push(chunk);
          await to.docker.getContainer(to.containerId).putArchive(Buffer.concat(chunks), { path: "/work" });
        })
      ).ms,
    );
  }
  await only(ids);
  const cp = median(roundTrip);
  rows.push([
    `fork, ${write.output.trim()} MiB /work, same node`,
    fmtMs(median(sameNode)),
    `docker cp round trip ${fmtMs(cp)}`,
    fmtRatio(median(sameNode), cp),
  ]);
  rows.push([
    `fork, ${write.output.trim()} MiB /work, across nodes`,
    fmtMs(median(acrossNodes)),
    `docker cp round trip ${fmtMs(cp)}`,
    fmtRatio(median(acrossNodes), cp),
  ]);
  await closeAll(runtime);

  // 3. Freeze and thaw on a worker vs the local docker runtime.
  const localDir = mkdtempSync(join(tmpdir(), "swarmd-bench-docker-"));
  const docker = createDockerRuntime({ dataDir: localDir });
  const freezeThaw = async (rt: SandboxRuntime) => {
    const req = request("frozen");
    await rt.provision(req, signal());
    await rt.startHarness(req.sandboxId, signal());
    const freezes: number[] = [];
    const thaws: number[] = [];
    for (let rep = 0; rep < 10; rep++) {
      freezes.push((await timed(() => rt.freeze(req.sandboxId, signal()))).ms);
      thaws.push((await timed(() => rt.thaw(req.sandboxId, signal()))).ms);
    }
    await rt.close(req.sandboxId, signal());
    return { freeze: median(freezes), thaw: median(thaws) };
  };
  await only([worker]);
  const onWorker = await freezeThaw(runtime);
  const local = await freezeThaw(docker);
  rmSync(localDir, { recursive: true, force: true });
  rows.push([
    "freeze (median of 10)",
    `worker ${fmtMs(onWorker.freeze)}`,
    `local docker ${fmtMs(local.freeze)}`,
    fmtRatio(onWorker.freeze, local.freeze),
  ]);
  rows.push([
    "thaw (median of 10)",
    `worker ${fmtMs(onWorker.thaw)}`,
    `local docker ${fmtMs(local.thaw)}`,
    fmtRatio(onWorker.thaw, local.thaw),
  ]);

  // 4. IDLE idle agents over the 3 nodes, and where the swarm put them.
  await only(ids);
  const queue = new PQueue({ concurrency: 8 });
  const { ms: idleMs, value: placed } = await timed(() =>
    Promise.all(
      Array.from({ length: IDLE }, (_, i) =>
        queue.add(async () => {
          const req = request(`idle${i}`);
          const info = await runtime.provision(req, signal());
          await runtime.startHarness(req.sandboxId, signal());
          return info.node ?? "?";
        }),
      ),
    ),
  );
  const perNode = ids.map((id, i) => `node ${i + 1}: ${placed.filter((n) => n === id).length}`).join(", ");
  rows.push([
    `${IDLE} idle agents (harness started), 8 at a time`,
    fmtMs(idleMs),
    perNode,
    `${fmtMs(idleMs / IDLE)} each`,
  ]);
  await closeAll(runtime);

  console.log(markdownTable(["cluster runtime (3 test nodes on one machine)", "ours", "baseline", "ratio"], rows));
} finally {
  await only(ids).catch(() => undefined);
  await closeAll(runtime).catch(() => undefined);
  runtime.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
