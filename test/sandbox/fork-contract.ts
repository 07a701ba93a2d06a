import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { type ErrorCode, isSwarmError } from "../../src/errors.ts";
import type { ForkSource, ProvisionRequest, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { TreeEntry, WorkTree } from "../../src/sandbox/work-tree.ts";
import { createTestHarnessClient, type TestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import type { SandboxContractSetup } from "./contract.ts";

const signal = () => AbortSignal.timeout(60_000);

async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isSwarmError(err, code), `expected ${code}, got ${String(err)}`);
    return true;
  });
}

/** What a fork contract setup adds: where a runtime's mounts would be left (host runtimes). */
export interface ForkContractSetup extends SandboxContractSetup {
  /** Mounts of the data folder still there, described: none once every sandbox closed and its run was dropped. */
  mounts?: () => Promise<string[]>;
  /** Host runtimes: what a fork child's /work (or where it links to) is mounted as (`overlay`: it shares its fork point). */
  workMount?: (sandboxId: string) => Promise<string | undefined>;
}

/** The file system type mounted at `path`, if something is (from /proc/self/mountinfo). */
export async function mountTypeAt(path: string): Promise<string | undefined> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  for (const line of info.split("\n")) {
    const fields = line.split(" ");
    if (fields[4] !== path) continue;
    return fields[fields.indexOf("-") + 1];
  }
  return undefined;
}

/** Mount points under `dataDir` (from /proc/self/mountinfo). */
export async function mountsUnder(dataDir: string): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${dataDir}/`));
}

/**
 * The fork part of the sandbox runtime contract (`snapshot`, `fork` from a fork point, `openTree`,
 * `applyChanges`, `dropRun`), run against every runtime: children of one fork point start from its
 * files and its conversation, never see the parent's or a sibling's later writes, keep their
 * changes after they close, and a run's drop leaves nothing.
 */
export function runForkContract(name: string, setup: () => Promise<ForkContractSetup>): void {
  describe(`sandbox runtime fork contract: ${name}`, () => {
    let env: ForkContractSetup;
    let rt: SandboxRuntime;
    const models = scriptGateway();
    const made = new Set<string>();
    const runs = new Set<string>();

    before(async () => {
      env = await setup();
      rt = models.wrap(env.runtime);
    });
    after(async () => {
      for (const id of made) await rt.close(id, signal()).catch(() => undefined);
      for (const runId of runs) await rt.dropRun(runId, signal()).catch(() => undefined);
      await models.close();
      await env.cleanup();
    });

    const request = (runId: string, spec: Record<string, unknown>, fork?: ForkSource): ProvisionRequest => {
      const sandboxId = randomUUID();
      made.add(sandboxId);
      runs.add(runId);
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
    const entries = async (tree: WorkTree) => {
      try {
        return (await tree.entries(signal())).map((e: TreeEntry) => `${e.kind} ${e.path}`).sort();
      } finally {
        await tree.close();
      }
    };
    const readTree = async (tree: WorkTree, path: string) => {
      try {
        return (await tree.read(path, 1024 * 1024, signal())).toString("utf8");
      } finally {
        await tree.close();
      }
    };

    it("forks children from one fork point: its files and conversation, none of the parent's or a sibling's later writes", async () => {
      const runId = `run-${randomUUID()}`;
      const parentReq = request(
        runId,
        script(
          bash("mkdir -p /work/d && echo one > /work/d/a.txt"),
          { text: "noted" },
          bash("echo later > /work/late.txt"),
          { text: "later" },
        ),
      );
      await rt.provision(parentReq, signal());
      const parent = await open(parentReq.sandboxId);
      await parent.prompt("remember tangerine");

      const baseId = randomUUID();
      await rt.snapshot(parentReq.sandboxId, baseId, runId, signal());
      await rt.snapshot(parentReq.sandboxId, baseId, runId, signal()); // idempotent
      assert.equal((await rt.inspect(parentReq.sandboxId, signal()))?.status, "running", "the parent is left running");
      await parent.prompt("write more"); // after the fork point: no child sees it

      const childSpec = (file: string) =>
        script(
          bash(
            `ls -A /work | tr '\\n' ' '; cat /work/d/a.txt; echo ${file} > /work/${file}; sleep 0.3; ls -A /work | tr '\\n' ' '`,
          ),
          { text: "{{lastToolResult}}|{{userMessages}}" },
        );
      const one = request(runId, childSpec("one.txt"), { baseId, copy: 1, of: 2 });
      const two = request(runId, childSpec("two.txt"), { baseId, copy: 2, of: 2 });
      await rt.fork(parentReq.sandboxId, one, signal());
      await rt.fork(parentReq.sandboxId, two, signal());
      if (env.workMount)
        assert.equal(
          await env.workMount(one.sandboxId),
          "overlay",
          "a fork child's /work is an overlay on its fork point, not a copy of it",
        );
      const [c1, c2] = await Promise.all([open(one.sandboxId), open(two.sandboxId)]);
      const [r1, r2] = await Promise.all([c1.prompt("try one"), c2.prompt("try two")]);
      assert.deepEqual(r1.toolOutputs, ["d one\nd one.txt "]);
      assert.deepEqual(r2.toolOutputs, ["d one\nd two.txt "]);
      assert.equal(
        (r1.settled.data as { text: string }).text,
        "d one\nd one.txt |remember tangerine\ntry one",
        "the child's model was given the parent's conversation, then its own prompt",
      );

      assert.deepEqual(await entries(await rt.openTree({ baseId }, signal())), ["dir d", "file d/a.txt"]);
      assert.deepEqual(await entries(await rt.openTree({ sandboxId: one.sandboxId }, signal())), [
        "dir d",
        "file d/a.txt",
        "file one.txt",
      ]);
      c1.close();
      c2.close();
      await rt.close(one.sandboxId, signal());
      assert.deepEqual(
        await entries(await rt.openTree({ sandboxId: one.sandboxId }, signal())),
        ["dir d", "file d/a.txt", "file one.txt"],
        "a closed fork child's /work stays readable",
      );
      assert.equal(await readTree(await rt.openTree({ sandboxId: one.sandboxId }, signal()), "one.txt"), "one.txt\n");
      await rejectsWith(rt.openTree({ baseId: randomUUID() }, signal()), "SANDBOX_NOT_FOUND");
      await rejectsWith(rt.openTree({ sandboxId: randomUUID() }, signal()), "SANDBOX_NOT_FOUND");
      parent.close();

      await rt.close(two.sandboxId, signal());
      await rt.close(parentReq.sandboxId, signal());
      await rt.dropRun(runId, signal());
      await rt.dropRun(runId, signal());
      await rejectsWith(rt.openTree({ baseId }, signal()), "SANDBOX_NOT_FOUND");
      await rejectsWith(rt.openTree({ sandboxId: one.sandboxId }, signal()), "SANDBOX_NOT_FOUND");
      assert.deepEqual((await env.mounts?.()) ?? [], [], "no mount is left");
    });

    it("applies changes to a live /work: files, links, folders and deletions, within its disk limit", async () => {
      const runId = `run-${randomUUID()}`;
      const req = request(
        runId,
        script(
          bash("echo keep > /work/keep.txt; echo gone > /work/gone.txt"),
          { text: "ok" },
          bash("cat /work/new/f.txt; readlink /work/link; ls -A /work | tr '\\n' ' '"),
          { text: "ok" },
        ),
        undefined,
      );
      const limited = { ...req, limits: { pids: 512, memoryMiB: 2048, cpus: 1, diskMiB: 1, tmpMiB: 64 } };
      await rt.provision(limited, signal());
      const client = await open(req.sandboxId);
      await client.prompt("first");
      await rejectsWith(
        rt.applyChanges(
          req.sandboxId,
          [{ path: "big.bin", kind: "file", content: Buffer.alloc(2 * 1024 * 1024), mode: 0o644 }],
          signal(),
        ),
        "DISK_LIMIT",
      );
      await rt.applyChanges(
        req.sandboxId,
        [
          { path: "gone.txt", kind: "delete" },
          { path: "new", kind: "dir", mode: 0o755 },
          { path: "new/f.txt", kind: "file", content: Buffer.from("adopted\n"), mode: 0o644 },
          { path: "link", kind: "symlink", target: "new/f.txt" },
        ],
        signal(),
      );
      const { toolOutputs } = await client.prompt("second");
      assert.deepEqual(toolOutputs, ["adopted\nnew/f.txt\nkeep.txt link new "]);
      client.close();
    });

    it("takes a fork point of a hibernated sandbox without waking it", async () => {
      const runId = `run-${randomUUID()}`;
      const req = request(runId, script(bash("echo asleep > /work/s.txt"), { text: "done" }));
      await rt.provision(req, signal());
      const client = await open(req.sandboxId);
      await client.prompt("write");
      await rt.hibernate(req.sandboxId, signal());
      await client.closed;
      const baseId = randomUUID();
      await rt.snapshot(req.sandboxId, baseId, runId, signal());
      assert.equal((await rt.inspect(req.sandboxId, signal()))?.status, "hibernated");
      const child = request(runId, script(bash("cat /work/s.txt"), { text: "{{userMessages}}" }), {
        baseId,
        copy: 1,
        of: 1,
      });
      await rt.fork(req.sandboxId, child, signal());
      const childClient = await open(child.sandboxId);
      const { settled, toolOutputs } = await childClient.prompt("read");
      assert.deepEqual(toolOutputs, ["asleep\n"]);
      assert.equal((settled.data as { text: string }).text, "write\nread");
      childClient.close();
    });
  });
}
