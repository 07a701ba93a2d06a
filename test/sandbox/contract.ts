import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { availableParallelism, hostname, totalmem } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type ErrorCode, isSwarmError } from "../../src/errors.ts";
import type { HarnessEventMessage } from "../../src/harness/protocol.ts";
import type { ProvisionRequest, SandboxInfo, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { createTestHarnessClient, type TestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";

/** What one adapter hands the contract suite. */
export interface SandboxContractSetup {
  runtime: SandboxRuntime;
  /** A second runtime on the same data (what a restarted service creates). */
  reopen: () => Promise<SandboxRuntime>;
  cleanup: () => Promise<void>;
  /** Host path of the sandbox's `/work` (both runtimes keep it on the host), to watch its files. */
  workDir: (sandboxId: string) => string;
  /**
   * Runtimes with many nodes (cluster): a sandbox's `node` is one of `nodes()`'s ids, and a node
   * reserves this share of a sandbox's limits. Default: one node, `local`, reserving the limits.
   */
  multiNode?: { reserve: number };
  /** A file of the sandbox's `/work`, for runtimes that keep it off this host (cluster); default: read it under `workDir`. */
  readWork?: (sandboxId: string, file: string) => Promise<string | undefined>;
  /** Adapter-specific remains of a closed sandbox (processes, containers, images, cgroups), described. */
  leaks?: (sandboxId: string) => Promise<string[]>;
  /** The sandbox's live processes on the host, described: none once it hibernated (runtimes with host processes). */
  processes?: (sandboxId: string) => Promise<string[]>;
  /**
   * The runtime may hand out a sandbox whose harness already runs (the process runtime's pool):
   * a provisioned sandbox is then not "never started", and its `startHarness` resolves at once.
   */
  startsAhead?: boolean;
}

/** Cases whose sandboxes keep a process running in the background (`cmd &`) after its tool call. */
export type BackgroundProcessCase = "freeze" | "fork" | "close" | "listWhileClosing";

export interface SandboxContractOptions {
  /** Cases a runtime without OS processes skips, each with the reason the test report shows. */
  skip?: Partial<Record<BackgroundProcessCase, string>>;
}

/** Spec of a scripted agent whose one turn runs `command` in bash. */
const bashSpec = (...commands: string[]): Record<string, unknown> => ({
  name: "t",
  script: [...commands.flatMap((command) => [{ tool: "bash", args: { command } }, { text: "done" }])],
});

/** A counter in the background; it outlives the tool call that starts it. */
const COUNTER = (file: string) =>
  `(i=0; while true; do i=$((i+1)); echo $i > ${file}.tmp; mv ${file}.tmp ${file}; sleep 0.05; done) > /dev/null 2>&1 &`;

const signal = () => AbortSignal.timeout(60_000);

async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isSwarmError(err, code), `expected ${code}, got ${String(err)}`);
    return true;
  });
}

/** Poll an async probe until it returns a value, for state that announces no event. */
async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * The one contract every sandbox runtime passes. Commands run inside a sandbox only through its
 * harness (scripted bash steps), and are observed through harness events or files the sandbox
 * writes into its `/work`, read where the adapter keeps it on the host (`workDir`). An agent
 * cannot write its control folder: that belongs to its harness.
 */
export function runSandboxContract(
  name: string,
  setup: () => Promise<SandboxContractSetup>,
  options: SandboxContractOptions = {},
): void {
  const unless = (which: BackgroundProcessCase) => ({ skip: options.skip?.[which] ?? false });
  describe(`sandbox runtime contract: ${name}`, () => {
    let env: SandboxContractSetup;
    let rt: SandboxRuntime;
    const made = new Set<string>();
    // The daemon serves every sandbox's model gateway: here the test does, answering each spec's script.
    const models = scriptGateway();

    before(async () => {
      env = await setup();
      rt = models.wrap(env.runtime);
    });
    after(async () => {
      for (const id of made) await rt.close(id, signal()).catch(() => undefined);
      await models.close();
      await env.cleanup();
    });

    const request = (spec: Record<string, unknown>, extra: Partial<ProvisionRequest> = {}): ProvisionRequest => {
      const sandboxId = randomUUID();
      made.add(sandboxId);
      return { sandboxId, runId: `run-${randomUUID()}`, agentId: `agent-${randomUUID()}`, spec, ...extra };
    };
    const provision = async (spec: Record<string, unknown>, extra?: Partial<ProvisionRequest>) =>
      rt.provision(request(spec, extra), signal());
    const open = async (sandboxId: string, runtime = rt): Promise<TestHarnessClient> => {
      const client = createTestHarnessClient(await runtime.connect(sandboxId, signal()));
      client.hello(0);
      return client;
    };
    const started = async (spec: Record<string, unknown>) => {
      const info = await provision(spec);
      await rt.startHarness(info.sandboxId, signal());
      return { info, client: await open(info.sandboxId) };
    };
    /** The node a runtime should name: `local` on one host, else one of its nodes. */
    const expectedNode = async (info: SandboxInfo): Promise<string> => {
      if (!env.multiNode) return "local";
      const ids = (await rt.nodes(signal())).map((n) => n.id);
      assert.ok(info.node && ids.includes(info.node), `node ${info.node} is one of ${ids.join(", ")}`);
      return info.node;
    };
    const workFile = async (sandboxId: string, file: string) =>
      env.readWork
        ? env.readWork(sandboxId, file).catch(() => undefined)
        : readFile(join(env.workDir(sandboxId), file), "utf8").catch(() => undefined);
    const counter = async (sandboxId: string): Promise<number | undefined> => {
      const text = (await workFile(sandboxId, "counter"))?.trim();
      return text ? Number(text) : undefined;
    };
    const counterAbove = (sandboxId: string, floor: number) =>
      eventually(async () => {
        const value = await counter(sandboxId);
        return value !== undefined && value > floor ? value : undefined;
      }, `the counter of ${sandboxId} to pass ${floor}`);
    const status = async (sandboxId: string, runtime = rt) => (await runtime.inspect(sandboxId, signal()))?.status;

    it("provisions an empty sandbox, starts its harness once and talks to it", async () => {
      const req = request(bashSpec("echo work=$(ls -A /work | wc -l) inputs=$(ls -A /inputs | wc -l)"));
      const info = await rt.provision(req, signal());
      const expected: SandboxInfo = {
        sandboxId: req.sandboxId,
        runId: req.runId,
        agentId: req.agentId,
        status: "running",
        node: await expectedNode(info),
      };
      assert.deepEqual(info, expected);
      assert.deepEqual(await rt.inspect(req.sandboxId, signal()), expected);
      assert.deepEqual(
        (await rt.list(signal())).find((i) => i.sandboxId === req.sandboxId),
        expected,
      );
      assert.equal(await rt.inspect(randomUUID(), signal()), undefined);
      await rejectsWith(rt.provision(req, signal()), "SANDBOX_EXISTS");

      await rt.startHarness(req.sandboxId, signal());
      const client = await open(req.sandboxId);
      const state = await client.request({ type: "get_state" });
      assert.equal(state.type, "response");
      assert.equal(state.command, "get_state");
      assert.equal(state.success, true, state.error);

      await rt.startHarness(req.sandboxId, signal());
      assert.equal(
        (await client.request({ type: "get_state" })).success,
        true,
        "a second start leaves the running harness and its client alone",
      );
      const { settled, toolOutputs } = await client.prompt("go");
      assert.equal((settled.data as { outcome: string }).outcome, "success");
      assert.deepEqual(
        toolOutputs.map((o) => o.replace(/\s+/g, " ").trim()),
        ["work=0 inputs=0"],
      );
      client.close();
    });

    it(
      "freezes every process in place and thaws them to continue from where they stopped",
      unless("freeze"),
      async () => {
        const { info, client } = await started(bashSpec(COUNTER("/work/counter")));
        await client.prompt("go");
        await counterAbove(info.sandboxId, 3);

        await rt.freeze(info.sandboxId, signal());
        await rt.freeze(info.sandboxId, signal());
        assert.equal(await status(info.sandboxId), "frozen");
        const frozenAt = await counter(info.sandboxId);
        assert.ok(frozenAt !== undefined && frozenAt > 3);
        let answered = false;
        const pending = client.request({ type: "get_state" }, 30_000).then((r) => {
          answered = true;
          return r;
        });
        await sleep(700); // nothing to await: the point is that nothing happens for a while
        assert.equal(await counter(info.sandboxId), frozenAt, "the counter made no progress while frozen");
        assert.equal(answered, false, "a frozen harness does not answer");

        await rt.thaw(info.sandboxId, signal());
        await rt.thaw(info.sandboxId, signal());
        assert.equal(await status(info.sandboxId), "running");
        assert.equal((await pending).success, true, "the harness answers once thawed");
        const next = await counterAbove(info.sandboxId, frozenAt);
        assert.ok(next > frozenAt, `continues from ${frozenAt}, not from the start (saw ${next})`);
        client.close();
      },
    );

    it(
      "forks a copy of the parent's files without its processes and leaves the parent as it was",
      unless("fork"),
      async () => {
        const parentSpec = bashSpec(`echo from-parent > /work/note.txt; ${COUNTER("/work/counter")}`);
        const { info: parent, client } = await started(parentSpec);
        await client.prompt("go");
        await counterAbove(parent.sandboxId, 3);

        const childReq = request(
          bashSpec(
            'cat /work/note.txt; a=$(cat /work/counter); sleep 0.5; b=$(cat /work/counter); [ -n "$a" ] && [ "$a" = "$b" ] && echo still || echo moving',
          ),
        );
        const child = await rt.fork(parent.sandboxId, childReq, signal());
        assert.deepEqual(child, {
          sandboxId: childReq.sandboxId,
          runId: childReq.runId,
          agentId: childReq.agentId,
          status: "running",
          node: await expectedNode(child),
        });
        assert.equal(await status(parent.sandboxId), "running", "the parent is not left frozen");
        await counterAbove(parent.sandboxId, (await counter(parent.sandboxId)) ?? 0);

        await rt.startHarness(child.sandboxId, signal());
        const childClient = await open(child.sandboxId);
        const { toolOutputs } = await childClient.prompt("go");
        assert.deepEqual(toolOutputs, ["from-parent\nstill\n"], "the copied counter file has no process writing it");

        await rt.freeze(parent.sandboxId, signal());
        await rt.fork(parent.sandboxId, request(bashSpec("true")), signal());
        assert.equal(await status(parent.sandboxId), "frozen", "a frozen parent stays frozen");
        await rt.thaw(parent.sandboxId, signal());

        const orphan = request(bashSpec("true"));
        await rejectsWith(rt.fork(randomUUID(), orphan, signal()), "SANDBOX_NOT_FOUND");
        assert.equal(await rt.inspect(orphan.sandboxId, signal()), undefined);
        client.close();
        childClient.close();
      },
    );

    it("answers its nodes (one, local, on a single host), counting this data folder's live sandboxes and the limits they reserve", async () => {
      const share = env.multiNode?.reserve ?? 1;
      const nodeOf = async (id?: string) => {
        const nodes = await rt.nodes(signal());
        if (!env.multiNode)
          assert.equal(nodes.length, 1, `one node on a single-host runtime, got ${JSON.stringify(nodes)}`);
        const node = id === undefined ? nodes[0] : nodes.find((n) => n.id === id);
        assert.ok(node, `node ${id} in ${JSON.stringify(nodes)}`);
        return node;
      };
      if (!env.multiNode) {
        const only = await nodeOf();
        assert.equal(only.id, "local");
        assert.equal(only.hostname, hostname());
        assert.equal(only.cpus, availableParallelism());
        assert.equal(only.memoryMiB, Math.floor(totalmem() / 2 ** 20));
      }
      for (const node of await rt.nodes(signal())) {
        assert.equal(node.state, "ready");
        assert.equal(node.availability, "active");
        assert.equal(node.engine, "reachable");
        assert.equal(node.reason, undefined);
      }

      const limits = { pids: 64, memoryMiB: 300, cpus: 0.25, diskMiB: 100, tmpMiB: 16 };
      const all = await rt.nodes(signal());
      const info = await provision(bashSpec("true"), { limits });
      await rt.startHarness(info.sandboxId, signal());
      assert.ok(info.node);
      const before = all.find((n) => n.id === info.node);
      assert.ok(before, `its node ${info.node} was listed before`);
      const during = await nodeOf(info.node);
      assert.equal(during.sandboxes, before.sandboxes + 1);
      const near = (a: number, b: number, within: number, what: string) =>
        assert.ok(Math.abs(a - b) <= within, `${what}: ${a}, expected ${b}`);
      near(during.reservedCpus, before.reservedCpus + 0.25 * share, 0.002, "reserved cpus");
      near(during.reservedMemoryMiB, before.reservedMemoryMiB + 300 * share, 1, "reserved MiB");

      await rt.close(info.sandboxId, signal());
      const after = await nodeOf(info.node);
      assert.deepEqual(
        [after.sandboxes, after.reservedCpus, after.reservedMemoryMiB],
        [before.sandboxes, before.reservedCpus, before.reservedMemoryMiB],
        "a closed sandbox reserves nothing",
      );
    });

    it("shows inputs written from outside at /inputs, before and while the harness runs", async () => {
      const info = await provision(bashSpec("cat /inputs/x.md", "cat /inputs/x.md /inputs/y.md"));
      await rt.writeInputs(info.sandboxId, { "x.md": "# one\n" }, signal());
      await rt.startHarness(info.sandboxId, signal());
      const client = await open(info.sandboxId);
      assert.deepEqual((await client.prompt("first")).toolOutputs, ["# one\n"]);

      await rt.writeInputs(info.sandboxId, { "x.md": "# two\n", "y.md": "why\n" }, signal());
      assert.deepEqual((await client.prompt("second")).toolOutputs, ["# two\nwhy\n"]);

      for (const bad of ["", ".", "..", "../x.md", "a/b", "nul\0byte"]) {
        await rejectsWith(
          rt.writeInputs(info.sandboxId, { "ok.md": "fine", [bad]: "no" }, signal()),
          "INVALID_INPUT_NAME",
        );
      }
      await rejectsWith(rt.writeInputs(randomUUID(), { "x.md": "" }, signal()), "SANDBOX_NOT_FOUND");
      client.close();
    });

    it("closes a frozen sandbox with running tools and leaves nothing behind, twice", unless("close"), async () => {
      const { info, client } = await started(bashSpec("sleep 1000 > /dev/null 2>&1 & echo started"));
      assert.deepEqual((await client.prompt("go")).toolOutputs, ["started\n"]);
      await rt.freeze(info.sandboxId, signal());

      await rt.close(info.sandboxId, signal());
      await client.closed;
      assert.equal(await rt.inspect(info.sandboxId, signal()), undefined);
      assert.equal(
        (await rt.list(signal())).some((i) => i.sandboxId === info.sandboxId),
        false,
      );
      await rejectsWith(rt.connect(info.sandboxId, signal()), "HARNESS_UNREACHABLE");
      assert.equal(existsSync(rt.controlDir(info.sandboxId)), false, "the control folder is removed");
      assert.deepEqual((await env.leaks?.(info.sandboxId)) ?? [], []);

      await rt.close(info.sandboxId, signal());
      await rt.close(randomUUID(), signal());
    });

    it(
      "lists and inspects without failing while other callers close sandboxes",
      unless("listWhileClosing"),
      async () => {
        const started3 = await Promise.all([0, 1, 2].map(() => started(bashSpec("sleep 1000 > /dev/null 2>&1 &"))));
        for (const { client } of started3) await client.prompt("go");
        await rt.freeze(started3[0]!.info.sandboxId, signal());
        const ids = started3.map(({ info }) => info.sandboxId);

        // A second service process (or a stop cascade) closes them while this one keeps looking.
        let closing = true;
        const closes = Promise.all(ids.map((id) => rt.close(id, signal()))).finally(() => (closing = false));
        let looks = 0;
        while (closing || looks < 3) {
          const listed = await rt.list(signal());
          for (const info of listed.filter((i) => ids.includes(i.sandboxId)))
            assert.match(info.status, /^(running|frozen|gone)$/);
          await Promise.all(ids.map((id) => rt.inspect(id, signal())));
          looks += 1;
        }
        await closes;
        assert.deepEqual(
          (await rt.list(signal())).filter((i) => ids.includes(i.sandboxId)),
          [],
        );
        for (const { client } of started3) client.close();
      },
    );

    it("lets a second runtime on the same data list and reconnect to live sandboxes", async () => {
      const { info: live, client } = await started(bashSpec("echo before-restart"));
      await client.prompt("go");
      const idle = await provision(bashSpec("true"));

      const rt2 = models.wrap(await env.reopen());
      const listed = await rt2.list(signal());
      assert.deepEqual(
        listed.find((i) => i.sandboxId === live.sandboxId),
        live,
      );
      assert.deepEqual(
        listed.find((i) => i.sandboxId === idle.sandboxId),
        idle,
      );
      await rt2.startHarness(live.sandboxId, signal());

      const again = await open(live.sandboxId, rt2);
      const replayed = (await again.waitFor(
        (m) => m.type === "event" && m.event === "tool_end",
      )) as HarnessEventMessage;
      assert.equal(replayed.data.output, "before-restart\n", "the new connection replays what happened before");
      await client.closed; // one client at a time: the new connection replaced the old one
      assert.equal((await again.request({ type: "get_state" })).success, true);

      await rt.freeze(live.sandboxId, signal());
      assert.equal(await status(live.sandboxId, rt2), "frozen");
      await rt2.thaw(live.sandboxId, signal());
      assert.equal(await status(live.sandboxId, rt), "running");
      await rt2.close(live.sandboxId, signal());
      await rt2.close(idle.sandboxId, signal());
      assert.equal(await rt.inspect(live.sandboxId, signal()), undefined);
      again.close();
    });

    it("hibernates an idle harness and wakes it with its files, its event log and its conversation", async () => {
      const { info, client } = await started(bashSpec("echo kept > /work/h.txt; cat /work/h.txt", "cat /work/h.txt"));
      const id = info.sandboxId;
      assert.deepEqual((await client.prompt("first")).toolOutputs, ["kept\n"]);
      const before = (await client.request({ type: "get_session_stats" })).data as {
        sessionId: string;
        userMessages: number;
        totalMessages: number;
      };
      const lastHseq = client.events.at(-1)!.hseq;

      await rt.hibernate(id, signal());
      await client.closed; // the harness ended, and its connection with it
      assert.equal(await status(id), "hibernated");
      assert.deepEqual((await env.processes?.(id)) ?? [], [], "nothing of a hibernated sandbox runs");
      assert.equal((await rt.list(signal())).find((i) => i.sandboxId === id)?.status, "hibernated");
      await rejectsWith(rt.connect(id, signal()), "HARNESS_UNREACHABLE");
      await rt.hibernate(id, signal());
      await rt.freeze(id, signal());
      await rt.thaw(id, signal());
      assert.equal(await status(id), "hibernated", "freeze and thaw leave a hibernated sandbox as it is");
      assert.equal(
        await status(id, models.wrap(await env.reopen())),
        "hibernated",
        "a restarted service finds it hibernated",
      );

      const childReq = request(bashSpec("cat /work/h.txt"));
      assert.equal((await rt.fork(id, childReq, signal())).status, "running");
      await rt.startHarness(childReq.sandboxId, signal());
      const childClient = await open(childReq.sandboxId);
      assert.deepEqual(
        (await childClient.prompt("read")).toolOutputs,
        ["kept\n"],
        "a fork of a hibernated sandbox has its files",
      );
      childClient.close();

      await rt.startHarness(id, signal());
      assert.equal(await status(id), "running");
      const woken = createTestHarnessClient(await rt.connect(id, signal()));
      woken.hello(lastHseq);
      const { toolOutputs } = await woken.prompt("second");
      assert.deepEqual(toolOutputs, ["kept\n"], "the second turn of the script runs: the session went on");
      assert.equal(
        woken.events[0]?.hseq,
        lastHseq + 1,
        "hseq goes on from before the hibernation, nothing replayed twice",
      );
      const after = (await woken.request({ type: "get_session_stats" })).data as typeof before;
      assert.equal(after.sessionId, before.sessionId);
      assert.equal(after.userMessages, before.userMessages + 1, "the woken session holds the earlier conversation");
      assert.ok(after.totalMessages > before.totalMessages);

      await rt.hibernate(id, signal());
      await woken.closed;
      await rt.close(id, signal());
      assert.equal(await rt.inspect(id, signal()), undefined, "a hibernated sandbox closes");
      assert.deepEqual((await env.leaks?.(id)) ?? [], []);
    });

    it("leaves a sandbox whose harness never started as it is when asked to hibernate it", async () => {
      const info = await provision(bashSpec("echo fresh"));
      await rt.hibernate(info.sandboxId, signal());
      // One whose harness was started ahead (when the runtime had one ready) is hibernated as any started one.
      assert.ok(
        [...(env.startsAhead ? ["hibernated"] : []), "running"].includes((await status(info.sandboxId)) ?? ""),
        `status ${await status(info.sandboxId)}`,
      );
      await rt.startHarness(info.sandboxId, signal());
      const client = await open(info.sandboxId);
      assert.deepEqual((await client.prompt("go")).toolOutputs, ["fresh\n"]);
      await rejectsWith(rt.hibernate(randomUUID(), signal()), "SANDBOX_NOT_FOUND");
      client.close();
    });

    it("refuses to hibernate a frozen sandbox and leaves it frozen", async () => {
      const { info, client } = await started(bashSpec("echo still"));
      await rt.freeze(info.sandboxId, signal());
      await rejectsWith(rt.hibernate(info.sandboxId, signal()), "SANDBOX_FROZEN");
      assert.equal(await status(info.sandboxId), "frozen");
      await rt.thaw(info.sandboxId, signal());
      assert.deepEqual((await client.prompt("go")).toolOutputs, ["still\n"], "the harness it kept answers");
      client.close();
    });

    it("reports a sandbox whose processes vanished as gone and refuses to use it", async () => {
      const { info, client } = await started(bashSpec("true"));
      assert.equal((await client.request({ type: "shutdown" })).success, true);
      await client.closed;
      await eventually(async () => ((await status(info.sandboxId)) === "gone" ? true : undefined), "status gone");
      assert.equal((await rt.list(signal())).find((i) => i.sandboxId === info.sandboxId)?.status, "gone");

      await rejectsWith(rt.startHarness(info.sandboxId, signal()), "SANDBOX_GONE");
      await rejectsWith(rt.freeze(info.sandboxId, signal()), "SANDBOX_GONE");
      await rejectsWith(rt.thaw(info.sandboxId, signal()), "SANDBOX_GONE");
      await rejectsWith(rt.hibernate(info.sandboxId, signal()), "SANDBOX_GONE");
      const child = request(bashSpec("true"));
      await rejectsWith(rt.fork(info.sandboxId, child, signal()), "SANDBOX_GONE");
      assert.equal(await rt.inspect(child.sandboxId, signal()), undefined);
      await rejectsWith(rt.connect(info.sandboxId, signal()), "HARNESS_UNREACHABLE");
      await rt.close(info.sandboxId, signal());
      assert.equal(await rt.inspect(info.sandboxId, signal()), undefined);
    });

    it("rejects aborted calls with the signal's reason and leaves nothing half-made", async () => {
      const reason = new Error("caller gave up");
      const aborted = AbortSignal.abort(reason);
      const req = request(bashSpec("true"));
      await assert.rejects(rt.provision(req, aborted), (err) => err === reason);
      assert.equal(await rt.inspect(req.sandboxId, signal()), undefined);

      const parent = await provision(bashSpec("echo up"));
      const child = request(bashSpec("true"));
      await assert.rejects(rt.fork(parent.sandboxId, child, aborted), (err) => err === reason);
      assert.equal(await rt.inspect(child.sandboxId, signal()), undefined);

      // A harness takes longer than 50 ms to start (node alone takes about that), so the abort lands while
      // it is awaited; one started ahead must not be started again (hibernated first, it is started anew).
      if (env.startsAhead) await rt.hibernate(parent.sandboxId, signal());
      const before = await status(parent.sandboxId);
      const soon = AbortSignal.timeout(50);
      await assert.rejects(rt.startHarness(parent.sandboxId, soon), (err) => err === soon.reason);
      assert.equal(await status(parent.sandboxId), before);
      await rt.startHarness(parent.sandboxId, signal());
      const client = await open(parent.sandboxId);
      assert.deepEqual((await client.prompt("go")).toolOutputs, ["up\n"], "a fresh start after the aborted one works");
      client.close();
    });

    it("fails to start a harness that dies, with the harness's own output in the error", async () => {
      // Its node refuses the option it is given and ends at once. (A harness reads its spec when it
      // makes its agent; the simulated runtime, whose harness runs in the daemon, refuses the bad
      // name at the start instead, and the pool starts a spec it refuses cold.)
      const info = await provision(
        { name: "not a valid name!", script: [] },
        { env: { NODE_OPTIONS: "--no-such-node-option" } },
      );
      await assert.rejects(rt.startHarness(info.sandboxId, signal()), (err: unknown) => {
        assert.ok(isSwarmError(err, "HARNESS_START_FAILED"), String(err));
        assert.match(err.message, /--no-such-node-option|must be 1\.\.64 characters/);
        return true;
      });
    });
  });
}
