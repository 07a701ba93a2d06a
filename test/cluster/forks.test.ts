/**
 * Forks on the cluster runtime, over the test cluster of `make test-cluster`: the fork contract
 * (test/sandbox/fork-contract.ts), then what only a cluster has: a fork point on one node and its
 * children placed on another (its /work streamed across), the existing fork across nodes with a
 * link that points above /work, trees read safely through the engine's archives, changes never
 * written through a link, and nothing left on any node (no helper container, no fork point or
 * kept volume) once the run is dropped. One file, in order: the cross-node part changes the nodes'
 * availability.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import type { ForkSource, ProvisionRequest, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { WorkTree } from "../../src/sandbox/work-tree.ts";
import { runForkContract } from "../sandbox/fork-contract.ts";
import { clusterLeftovers, createTestClusterRuntime, execIn, readWork } from "../support/cluster-runtime.ts";
import { createTestHarnessClient, type TestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { type ClusterSettings, setAvailability, whenCluster } from "../support/test-cluster.ts";

const signal = () => AbortSignal.timeout(120_000);

/**
 * What a data folder's forks may have left on the cluster: services, helper containers and
 * volumes labelled with its owner on every node, and fork point records in it.
 */
async function forkLeaks(dataDir: string): Promise<string[]> {
  const found = await clusterLeftovers(dataDir);
  const bases = await readdir(join(dataDir, "forks", "bases")).catch(() => []);
  found.push(...bases.map((id) => `fork point record ${id}`));
  return found;
}

await whenCluster("cluster runtime forks", (cluster: ClusterSettings) => {
  const dataDir = mkdtemp(join(tmpdir(), "swarmd-cluster-forks-"));
  const made: Array<{ stop(): void }> = [];

  runForkContract("cluster (Docker Swarm, 3 nodes)", async () => {
    const dir = await dataDir;
    const make = () => {
      const runtime = createTestClusterRuntime(dir);
      made.push(runtime);
      return runtime;
    };
    return {
      runtime: make(),
      reopen: async () => make(),
      // The runtimes stay for the leak check below; the last suite removes the folder.
      cleanup: async () => undefined,
      workDir: () => "/nonexistent",
      readWork: (sandboxId, file) => readWork(dir, sandboxId, file),
    };
  });

  describe("cluster runtime forks: after the contract", () => {
    it("leaves no helper container, no fork point or kept volume, no record once every run was dropped", async () => {
      assert.deepEqual(await forkLeaks(await dataDir), []);
    });
  });

  describe("cluster runtime forks across nodes", { timeout: 600_000 }, () => {
    const ids = cluster.nodes.map((n) => n.id);
    const [, first, second] = ids as [string, string, string];
    const models = scriptGateway();
    let rt: SandboxRuntime;
    const sandboxes = new Set<string>();
    const runId = `run-${randomUUID()}`;
    const timings: string[] = [];

    before(async () => {
      for (const id of ids) await setAvailability(id, "active");
      const runtime = createTestClusterRuntime(await dataDir, { localWaitMs: 1_000 });
      made.push(runtime);
      rt = models.wrap(runtime);
    });
    after(async () => {
      for (const id of ids) await setAvailability(id, "active").catch(() => undefined);
      for (const id of sandboxes) await rt.close(id, signal()).catch(() => undefined);
      await rt.dropRun(runId, signal()).catch(() => undefined);
      await models.close();
      for (const runtime of made) runtime.stop();
      if (timings.length > 0) console.log(`cluster fork timings:\n  ${timings.join("\n  ")}`);
      await rm(await dataDir, { recursive: true, force: true });
    });

    const onlyOn = async (nodeId: string) => {
      for (const id of ids) await setAvailability(id, id === nodeId ? "active" : "pause");
    };
    const request = (spec: Record<string, unknown>, fork?: ForkSource): ProvisionRequest => {
      const sandboxId = randomUUID();
      sandboxes.add(sandboxId);
      return { sandboxId, runId, agentId: `agent-${randomUUID()}`, spec, ...(fork ? { fork } : {}) };
    };
    const open = async (sandboxId: string): Promise<TestHarnessClient> => {
      await rt.startHarness(sandboxId, signal());
      const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
      client.hello(0);
      return client;
    };
    const script = (...steps: unknown[]) => ({ name: "t", script: steps });
    const bash = (command: string) => ({ tool: "bash", args: { command } });
    const timed = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
      const started = Date.now();
      const value = await work();
      timings.push(`${what}: ${Date.now() - started} ms`);
      return value;
    };
    const withTree = async <T>(tree: WorkTree, use: (tree: WorkTree) => Promise<T>): Promise<T> => {
      try {
        return await use(tree);
      } finally {
        await tree.close();
      }
    };
    const rejectsCode = async (promise: Promise<unknown>, code: string) =>
      assert.rejects(promise, (err: NodeJS.ErrnoException) => {
        assert.equal(err.code, code, String(err));
        return true;
      });

    let parent: ProvisionRequest;
    let parentClient: TestHarnessClient;
    let baseId: string;
    /** What the parent's /work holds at the fork point: links of every kind, a hard link, a FIFO, a name that is not UTF-8. */
    const FILES = [
      "mkdir -p /work/d && echo one > /work/d/a.txt",
      "ln -s ../../etc /work/up",
      "ln -s /etc /work/abs",
      "ln /work/d/a.txt /work/hard",
      "mkfifo /work/fifo",
      "touch \"/work/$(printf '\\377x')\"",
      "head -c 3000 /dev/zero > /work/big",
    ].join(" && ");

    it("takes a fork point on the parent's node", async () => {
      await onlyOn(first);
      parent = request(script(bash(FILES), { text: "made" }, bash("echo later > /work/late.txt"), { text: "later" }));
      await rt.provision(parent, signal());
      assert.equal((await rt.inspect(parent.sandboxId, signal()))?.node, first);
      parentClient = await open(parent.sandboxId);
      await parentClient.prompt("remember kumquat");
      baseId = randomUUID();
      await timed("snapshot (fork point) of a small /work", () =>
        rt.snapshot(parent.sandboxId, baseId, runId, signal()),
      );
      assert.equal((await rt.inspect(parent.sandboxId, signal()))?.status, "running", "the parent is left running");
      await parentClient.prompt("write more"); // after the fork point: no child sees it
    });

    it("reads the fork point's tree as lstat tells, never through a link, bounded", async () => {
      const entries = await withTree(await rt.openTree({ baseId }, signal()), (tree) => tree.entries(signal()));
      const byPath = new Map(entries.map((e) => [e.path, e]));
      assert.deepEqual(
        entries.map((e) => `${e.kind} ${e.path}`).sort(),
        [
          "dir d",
          "file big",
          "file d/a.txt",
          "file hard",
          "other fifo",
          "symlink abs",
          "symlink up",
          "file \uFFFDx",
        ].sort(),
      );
      assert.equal(byPath.get("up")?.linkTarget, "../../etc");
      assert.equal(byPath.get("hard")?.size, 4, "a hard link is listed as the file it is");
      assert.equal(byPath.get("\uFFFDx")?.unsupported, "its name is not UTF-8");
      assert.equal(byPath.get("d/a.txt")?.mode, 0o644);
      await withTree(await rt.openTree({ baseId }, signal()), async (tree) => {
        assert.equal((await tree.read("d/a.txt", 100, signal())).toString(), "one\n");
        assert.equal((await tree.read("hard", 100, signal())).toString(), "one\n");
        await rejectsCode(tree.read("abs/hostname", 1000, signal()), "ELOOP");
        await rejectsCode(tree.read("up", 1000, signal()), "ELOOP");
        await rejectsCode(tree.read("fifo", 1000, signal()), "ENOTREG");
        await rejectsCode(tree.read("d", 1000, signal()), "ENOTREG");
        await rejectsCode(tree.read("big", 100, signal()), "EFBIG");
        await rejectsCode(tree.read("nothing", 100, signal()), "ENOENT");
      });
    });

    it("forks children on another node than the fork point's, with its files and conversation", async () => {
      const childSpec = script(
        bash("cat /work/d/a.txt; readlink /work/up; stat -c %u /work/d/a.txt; ls -A /work | tr '\\n' ' '"),
        { text: "{{userMessages}}" },
      );
      const local = request(childSpec, { baseId, copy: 1, of: 2 });
      await onlyOn(first);
      await timed("fork from a fork point, on its node", () => rt.fork(parent.sandboxId, local, signal()));
      await onlyOn(second);
      const across = request(childSpec, { baseId, copy: 2, of: 2 });
      await timed("fork from a fork point, to another node", () => rt.fork(parent.sandboxId, across, signal()));
      assert.equal((await rt.inspect(local.sandboxId, signal()))?.node, first);
      assert.equal((await rt.inspect(across.sandboxId, signal()))?.node, second, "placed on another node");
      for (const child of [local, across]) {
        const client = await open(child.sandboxId);
        const { settled, toolOutputs } = await client.prompt("look");
        // busybox ls shows a byte that is not printable as `?`.
        assert.deepEqual(toolOutputs, ["one\n../../etc\n65532\nabs big d fifo hard up ?x "]);
        assert.equal((settled.data as { text: string }).text, "remember kumquat\nlook");
        client.close();
      }
      await rt.close(across.sandboxId, signal());
      const kept = await withTree(await rt.openTree({ sandboxId: across.sandboxId }, signal()), async (tree) => ({
        entries: (await tree.entries(signal())).map((e) => e.path).sort(),
        a: (await tree.read("d/a.txt", 100, signal())).toString(),
      }));
      assert.deepEqual(kept.entries, ["abs", "big", "d", "d/a.txt", "fifo", "hard", "up", "\uFFFDx"]);
      assert.equal(kept.a, "one\n", "a closed child's /work on another node stays readable");
    });

    it("forks the parent as it is now onto another node, a link pointing above /work included", async () => {
      await onlyOn(second);
      const kid = request(script(bash("readlink /work/up; cat /work/late.txt"), { text: "ok" }));
      await timed("fork of the parent as it is now, to another node", () => rt.fork(parent.sandboxId, kid, signal()));
      assert.equal((await rt.inspect(kid.sandboxId, signal()))?.node, second);
      const client = await open(kid.sandboxId);
      assert.deepEqual((await client.prompt("go")).toolOutputs, ["../../etc\nlater\n"]);
      client.close();
      await onlyOn(first);
      const near = request(script({ text: "ok" }));
      await timed("fork of the parent as it is now, on its node", () => rt.fork(parent.sandboxId, near, signal()));
    });

    it("applies changes never through a link, all checked before any is made", async () => {
      const target = parent.sandboxId;
      await assert.rejects(
        rt.applyChanges(
          target,
          [
            { path: "fine.txt", kind: "file", content: Buffer.from("fine\n"), mode: 0o644 },
            { path: "abs/evil", kind: "file", content: Buffer.from("no\n"), mode: 0o644 },
          ],
          signal(),
        ),
        (err: Error) => /not a folder/.test(err.message),
      );
      assert.equal(await readWork(await dataDir, target, "fine.txt"), undefined, "nothing was applied");
      await rt.applyChanges(
        target,
        [
          { path: "abs/hostname", kind: "delete" }, // under a link: nothing of /work there
          { path: "d", kind: "delete" },
          { path: "d/new/f.txt", kind: "file", content: Buffer.from("adopted\n"), mode: 0o4755 },
          { path: "up", kind: "symlink", target: "../../../somewhere" },
          { path: "big", kind: "dir", mode: 0o700 },
        ],
        signal(),
      );
      const entries = await withTree(await rt.openTree({ sandboxId: target }, signal()), (tree) =>
        tree.entries(signal()),
      );
      const byPath = new Map(entries.map((e) => [e.path, e]));
      assert.equal(byPath.get("d/a.txt"), undefined, "deleted");
      assert.equal(byPath.get("d/new")?.kind, "dir");
      assert.equal(byPath.get("d/new/f.txt")?.mode, 0o755, "no set-id bit");
      assert.equal(byPath.get("up")?.linkTarget, "../../../somewhere");
      assert.equal(byPath.get("big")?.kind, "dir");
      assert.equal(await readWork(await dataDir, target, "d/new/f.txt"), "adopted\n");
      const owners = await execIn(await dataDir, target, [
        "stat",
        "-c",
        "%u %a",
        "/work/d/new/f.txt",
        "/work/d/new",
        "/work/d",
      ]);
      assert.equal(owners.output, "65532 755\n65532 755\n65532 755\n", "the agent's, as it would have made them");
    });

    it("times forks of a /work of 64 MiB and 1,000 files: from the parent now, and from a fork point", async () => {
      await onlyOn(first);
      const big = request(
        script(
          bash(
            "head -c 67108864 /dev/urandom > /work/blob && mkdir /work/many && for i in $(seq 1000); do echo $i > /work/many/$i; done",
          ),
          { text: "made" },
        ),
      );
      await rt.provision(big, signal());
      const client = await open(big.sandboxId);
      await client.prompt("fill");
      client.close();
      const check = script(bash("stat -c %s /work/blob; ls /work/many | wc -l"), { text: "ok" });
      const sees = async (req: ProvisionRequest) => {
        const kid = await open(req.sandboxId);
        assert.deepEqual((await kid.prompt("check")).toolOutputs, ["67108864\n1000\n"]);
        kid.close();
      };
      const nearNow = request(check);
      await timed("64 MiB: fork of the parent now, on its node", () => rt.fork(big.sandboxId, nearNow, signal()));
      const point = randomUUID();
      await timed("64 MiB: snapshot (fork point)", () => rt.snapshot(big.sandboxId, point, runId, signal()));
      const nearBase = request(check, { baseId: point, copy: 1, of: 2 });
      await timed("64 MiB: fork from the fork point, on its node", () => rt.fork(big.sandboxId, nearBase, signal()));
      await onlyOn(second);
      const farNow = request(check);
      await timed("64 MiB: fork of the parent now, to another node", () => rt.fork(big.sandboxId, farNow, signal()));
      const farBase = request(check, { baseId: point, copy: 2, of: 2 });
      await timed("64 MiB: fork from the fork point, to another node", () => rt.fork(big.sandboxId, farBase, signal()));
      for (const req of [nearNow, nearBase, farNow, farBase]) await sees(req);
      await onlyOn(first);
      const tree = await rt.openTree({ baseId: point }, signal());
      await timed("64 MiB: list the fork point's tree (entries)", () => tree.entries(signal()));
      await tree.close();
    });

    it("drops the run: no fork point, kept volume, helper or record left on any node", async () => {
      parentClient.close();
      for (const id of sandboxes) await rt.close(id, signal());
      sandboxes.clear();
      await rt.dropRun(runId, signal());
      await rt.dropRun(runId, signal());
      await assert.rejects(rt.openTree({ baseId }, signal()), (err) => isSwarmError(err, "SANDBOX_NOT_FOUND"));
      assert.deepEqual(await forkLeaks(await dataDir), []);
    });
  });
});
