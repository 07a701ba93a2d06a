import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { mkdir, readFile, rm, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { isSwarmError } from "../../src/errors.ts";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { createCgroupFreezer, detectCgroupHierarchy } from "../../src/sandbox/process/cgroup-freezer.ts";
import { isStopped } from "../../src/sandbox/process/proc-table.ts";
import {
  createProcessRuntime,
  type ProcessRuntime,
  type ProcessRuntimeOptions,
  type RuntimeLogger,
} from "../../src/sandbox/process/process-runtime.ts";
import { sandboxTag } from "../../src/sandbox/process/sandbox-tag.ts";
import { createTestHarnessClient, type TestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { processLeaks, taggedProcesses } from "./process-setup.ts";

const quiet: RuntimeLogger = { info: () => undefined, warn: () => undefined };
const signal = () => AbortSignal.timeout(60_000);
const bashSpec = (command: string, extra: Record<string, unknown> = {}) => ({
  name: "t",
  script: [{ tool: "bash", args: { command } }, { text: "done" }],
  ...extra,
});
const COUNTER = (file: string) =>
  `(i=0; while true; do i=$((i+1)); echo $i > ${file}.tmp; mv ${file}.tmp ${file}; sleep 0.05; done) > /dev/null 2>&1 &`;

/** A runtime on a fresh data folder, its sandboxes' model gateways served; every sandbox it owns is closed after the test. */
function runtimeFor(
  t: TestContext,
  options: Omit<ProcessRuntimeOptions, "dataDir"> = {},
): { rt: ProcessRuntime & { models: ReturnType<typeof scriptGateway> }; dataDir: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-process-"));
  const models = scriptGateway();
  const rt = Object.assign(models.wrap(createProcessRuntime({ dataDir, logger: quiet, ...options })), { models });
  t.after(async () => {
    for (const info of await rt.list(signal())) await rt.close(info.sandboxId, signal());
    await models.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { rt, dataDir };
}

async function startSandbox(
  rt: ProcessRuntime,
  spec: Record<string, unknown>,
  extra: { env?: Record<string, string>; network?: boolean } = {},
) {
  const sandboxId = randomUUID();
  await rt.provision({ sandboxId, runId: "run", agentId: "agent", spec, ...extra }, signal());
  await rt.startHarness(sandboxId, signal());
  const client: TestHarnessClient = createTestHarnessClient(await rt.connect(sandboxId, signal()));
  client.hello(0);
  return { sandboxId, client };
}

const interfaces = (procNetDev: string) =>
  procNetDev
    .split("\n")
    .slice(2)
    .map((l) => l.split(":")[0]?.trim())
    .filter((n): n is string => Boolean(n))
    .sort();

async function counterAbove(file: string, floor: number): Promise<number> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = Number((await readFile(file, "utf8").catch(() => "")).trim() || "0");
    if (value > floor) return value;
    if (Date.now() > deadline) throw new Error(`${file} never passed ${floor}`);
    await sleep(20);
  }
}

describe("process runtime", () => {
  it("uses bubblewrap and a cgroup freezer on this machine", (t) => {
    const { rt } = runtimeFor(t);
    assert.equal(rt.kind, "process");
    assert.equal(rt.isolation, "bubblewrap");
    assert.match(rt.freezer, /^cgroup-v[12]$/);
  });

  it("isolates the harness with bubblewrap: loopback only, /work is the sandbox folder, no daemon env, no capabilities", async (t) => {
    process.env.SWARMD_DAEMON_ONLY = "must-not-leak";
    t.after(() => delete process.env.SWARMD_DAEMON_ONLY);
    const { rt, dataDir } = runtimeFor(t);
    const script = [
      "echo pwd=$(pwd)",
      "echo made-inside > /work/made-inside",
      "echo caps=$(awk '/CapEff/ {print $2}' /proc/self/status)",
      "echo procs=$(ls /proc | grep -c '^[0-9]')",
      "[ -e /etc/shadow ] && echo shadow=visible || echo shadow=hidden",
      "[ -e /etc/ssl/private ] && echo ssl-private=visible || echo ssl-private=hidden",
      "echo passwd=$(sha256sum < /etc/passwd | cut -c1-16)",
      "root=$(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep 'dist/harness/boot.cjs' | sed 's#/dist/harness/boot.cjs##')",
      "for f in $root/probe $root/dist/probe $root/dist/harness/probe $root/node_modules/probe /probe /usr/probe /etc/probe /etc/passwd; do touch $f 2>/dev/null && echo writable=$f; done",
      "[ -e $root/src ] || [ -e $root/data ] && echo checkout=visible || echo checkout=hidden",
      // The harness's node (the daemon's: under .node/ of the installation when fetched there): runs, and takes no writes.
      "node=$(tr '\\0' '\\n' < /proc/$PPID/cmdline | head -n 1)",
      "echo node-version=$($node --version)",
      '( : >> "$node" ) 2>/dev/null && echo writable=$node; touch "$(dirname "$node")/probe" 2>/dev/null && echo writable=$(dirname "$node")',
      "env | sort | sed 's/^/env:/'",
      "cat /proc/net/dev",
    ].join("; ");
    const { sandboxId, client } = await startSandbox(rt, bashSpec(script), { env: { SPEC_VAR: "from-spec" } });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();

    assert.deepEqual(interfaces(output.slice(output.indexOf("Inter-|"))), ["lo"]);
    assert.match(output, /^pwd=\/work$/m);
    assert.equal(readFileSync(join(dataDir, "sandboxes", sandboxId, "work", "made-inside"), "utf8"), "made-inside\n");
    assert.match(output, /^caps=0+$/m, "no capabilities inside, even when the service runs as root");
    const procs = Number(/^procs=(\d+)$/m.exec(output)?.[1]);
    assert.ok(procs > 0 && procs < 10, `own pid namespace: ${procs} processes visible`);
    assert.match(output, /^shadow=hidden$/m);
    assert.match(output, /^ssl-private=hidden$/m);
    const hostPasswd = createHash("sha256").update(readFileSync("/etc/passwd")).digest("hex").slice(0, 16);
    assert.match(output, new RegExp(`^passwd=${hostPasswd}$`, "m"), "the host's /etc/passwd, as it is");
    assert.doesNotMatch(output, /^writable=/m, "the installation, its node, /etc and the root are read-only");
    assert.match(output, new RegExp(`^node-version=${process.version}$`, "m"), "the harness runs the daemon's node");
    assert.match(output, /^checkout=hidden$/m);
    const env = output
      .split("\n")
      .filter((l) => l.startsWith("env:"))
      .map((l) => l.slice(4));
    assert.ok(env.includes("SPEC_VAR=from-spec"), env.join(" "));
    assert.ok(env.includes("HOME=/tmp"));
    assert.ok(env.includes(sandboxTag(sandboxId)));
    assert.equal(
      env.some((l) => l.startsWith("SWARMD_DAEMON_ONLY=")),
      false,
      "the daemon's environment stays outside",
    );
  });

  it("gives a sandbox asking for network its own namespace with slirp4netns's tap0, not the host's interfaces", async (t) => {
    const { rt } = runtimeFor(t);
    const { client } = await startSandbox(rt, bashSpec("cat /proc/net/dev"), { network: true });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    assert.deepEqual(interfaces(output), ["lo", "tap0"]); // test/security/network.test.ts shows what it reaches
  });

  it("freezes with the cgroup v1 freezer: every process of the cgroup, tools included", async (t) => {
    if (!detectCgroupHierarchy("cgroup-v1")) return t.skip("no writable cgroup v1 freezer here");
    const { rt, dataDir } = runtimeFor(t, { freezer: "cgroup-v1" });
    const { sandboxId, client } = await startSandbox(rt, bashSpec(COUNTER("/work/counter")));
    await client.prompt("go");
    const counterFile = join(dataDir, "sandboxes", sandboxId, "work", "counter");
    await counterAbove(counterFile, 3);
    const cgroup = join("/sys/fs/cgroup/freezer/swarmd", sandboxId);

    await rt.freeze(sandboxId, signal());
    assert.equal(readFileSync(join(cgroup, "freezer.state"), "utf8").trim(), "FROZEN");
    // Compared while frozen: running, the counter's short-lived sleep and mv come and go between the two reads.
    const members = readFileSync(join(cgroup, "cgroup.procs"), "utf8").trim().split("\n");
    assert.deepEqual(
      new Set(members),
      new Set((await taggedProcesses(sandboxId)).map((e) => String(e.pid))),
      "every sandbox process is in the cgroup",
    );
    const frozenAt = Number(readFileSync(counterFile, "utf8"));
    await sleep(500); // nothing to await: nothing may happen
    assert.equal(Number(readFileSync(counterFile, "utf8")), frozenAt);
    await rt.thaw(sandboxId, signal());
    assert.equal(readFileSync(join(cgroup, "freezer.state"), "utf8").trim(), "THAWED");
    await counterAbove(counterFile, frozenAt);

    client.close();
    await rt.close(sandboxId, signal());
    assert.deepEqual(await processLeaks(dataDir, sandboxId), []);
  });

  it("reads a cgroup removed mid-read (another caller closing the sandbox) as gone, not as an error", async (t) => {
    const hierarchy = detectCgroupHierarchy();
    if (!hierarchy) return t.skip("no writable cgroup freezer here");
    const dir = join(hierarchy.base, `removed-mid-read-${randomUUID()}`);
    const freezer = createCgroupFreezer(hierarchy.kind, dir);
    // The kernel answers ENODEV to a read of a cgroup file opened just before its cgroup went away.
    const failures: unknown[] = [];
    for (let round = 0; round < 200; round += 1) {
      await mkdir(dir);
      let removed = false;
      const readers = [0, 1, 2].map(async () => {
        do {
          try {
            assert.equal(await freezer.isFrozen(), false);
            assert.ok(Array.isArray(await freezer.members()));
          } catch (err) {
            failures.push(err);
          }
          // The reads are synchronous: let the removal (in node's thread pool) be awaited meanwhile.
          await new Promise((resolve) => setImmediate(resolve));
        } while (!removed);
      });
      await new Promise((resolve) => setImmediate(resolve));
      await rmdir(dir);
      removed = true;
      await Promise.all(readers);
    }
    assert.deepEqual(failures.map(String).slice(0, 3), []);
  });

  it("runs unisolated with a warning when bubblewrap is off, and freezes with SIGSTOP a tool in its own session", async (t) => {
    const warnings: string[] = [];
    const { rt, dataDir } = runtimeFor(t, {
      isolation: "none",
      freezer: "signal",
      logger: { info: () => undefined, warn: (m) => warnings.push(m) },
    });
    assert.equal(rt.isolation, "none");
    assert.equal(rt.freezer, "signal");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /UNISOLATED/);

    const { sandboxId, client } = await startSandbox(rt, bashSpec(`pwd; ${COUNTER("counter")}`));
    const workDir = join(dataDir, "sandboxes", sandboxId, "work");
    assert.deepEqual((await client.prompt("go")).toolOutputs, [`${workDir}\n`], "host paths, no /work");
    const counterFile = join(workDir, "counter");
    await counterAbove(counterFile, 3);
    const harnessSid = (await taggedProcesses(sandboxId)).find((e) => e.pid === e.sid)?.sid;
    assert.ok(
      (await taggedProcesses(sandboxId)).some((e) => e.sid !== harnessSid),
      "the counter runs in a session of its own",
    );

    await rt.freeze(sandboxId, signal());
    const frozen = await taggedProcesses(sandboxId);
    // The harness and the counter loop (its sleep comes and goes).
    assert.ok(frozen.length >= 2 && frozen.every(isStopped), frozen.map((e) => `${e.pid}:${e.state}`).join(" "));
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "frozen");
    const frozenAt = Number(readFileSync(counterFile, "utf8"));
    await sleep(500); // nothing to await: nothing may happen
    assert.equal(Number(readFileSync(counterFile, "utf8")), frozenAt);
    await rt.thaw(sandboxId, signal());
    assert.equal((await taggedProcesses(sandboxId)).some(isStopped), false);
    await counterAbove(counterFile, frozenAt);

    client.close();
    await rt.close(sandboxId, signal());
    assert.deepEqual(await processLeaks(dataDir, sandboxId), [], "the orphaned counter was found and killed too");
  });

  it("leaves the harness running when the service process that started it exits", async (t) => {
    const { rt, dataDir } = runtimeFor(t);
    const sandboxId = randomUUID();
    const service = `
      import { createProcessRuntime } from ${JSON.stringify(join(SWARMD_ROOT, "src/sandbox/process/process-runtime.ts"))};
      import { scriptGateway } from ${JSON.stringify(join(SWARMD_ROOT, "test/support/script-gateway.ts"))};
      const rt = scriptGateway().wrap(createProcessRuntime({ dataDir: process.env.T_DATA, logger: { info() {}, warn() {} } }));
      const spec = { name: "t", script: [{ tool: "bash", args: { command: "echo still-here" } }, { text: "done" }] };
      await rt.provision({ sandboxId: process.env.T_ID, runId: "run", agentId: "agent", spec }, AbortSignal.timeout(60000));
      await rt.startHarness(process.env.T_ID, AbortSignal.timeout(60000));
      process.exit(0);`;
    await new Promise<void>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", service],
        { cwd: SWARMD_ROOT, env: { ...process.env, T_DATA: dataDir, T_ID: sandboxId } },
        (err, _out, stderr) => (err ? reject(new Error(`service failed: ${stderr}`)) : resolve()),
      ),
    );
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "running");
    // Its model gateway went with that process; this one serves it again, as a restarted daemon does.
    await rt.models.serve(rt.controlDir(sandboxId), [
      { tool: "bash", args: { command: "echo still-here" } },
      { text: "done" },
    ]);
    const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
    client.hello(0);
    assert.deepEqual((await client.prompt("go")).toolOutputs, ["still-here\n"]);
    client.close();
  });

  it("never sees nor touches the sandboxes of another data folder", async (t) => {
    const { rt } = runtimeFor(t);
    const { rt: other } = runtimeFor(t);
    const { sandboxId, client } = await startSandbox(rt, bashSpec("true"));
    assert.equal(await other.inspect(sandboxId, signal()), undefined);
    assert.equal((await other.list(signal())).length, 0);
    await assert.rejects(other.freeze(sandboxId, signal()), (err) => isSwarmError(err, "SANDBOX_NOT_FOUND"));
    await other.close(sandboxId, signal());
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "running");
    assert.equal((await client.request({ type: "get_state" })).success, true, "its harness still answers");
    client.close();
  });

  it("refuses sandbox ids that are not plain names and data folders too deep for a socket path", async (t) => {
    const { rt, dataDir } = runtimeFor(t);
    const rejects = (promise: Promise<unknown>) =>
      assert.rejects(promise, (err) => isSwarmError(err, "SANDBOX_PROVISION_FAILED"));
    await rejects(rt.provision({ sandboxId: "../escape", runId: "r", agentId: "a", spec: {} }, signal()));
    assert.equal(existsSync(join(dataDir, "escape")), false);
    assert.equal(await rt.inspect("../escape", signal()), undefined);
    await rt.close("../escape", signal());

    const parent = mkdtempSync(join(tmpdir(), "swarmd-process-"));
    t.after(() => rm(parent, { recursive: true, force: true }));
    const deep = createProcessRuntime({ dataDir: join(parent, "d".repeat(60)), logger: quiet });
    await assert.rejects(
      deep.provision({ sandboxId: randomUUID(), runId: "r", agentId: "a", spec: {} }, signal()),
      (err) => {
        assert.ok(isSwarmError(err, "SANDBOX_PROVISION_FAILED"));
        assert.match(err.message, /shorter data folder/);
        return true;
      },
    );
    assert.deepEqual(await deep.list(signal()), []);
  });
});
