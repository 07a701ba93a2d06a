/**
 * The process runtime's pool (`SWARM_POOL_SIZE`, src/sandbox/process/sandbox-pool.ts): sandboxes
 * made and harnesses started ahead, each taken by one agent and never reused. What an agent that
 * takes one must find is what a cold start gives it (its run's users, its spec's env, its limits,
 * empty folders) and nothing of any other spec; containment, hibernation and restarts hold.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createProcessRuntime, type ProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { layoutAt, poolDir, sandboxLayout } from "../../src/sandbox/process/sandbox-layout.ts";
import { readRecord } from "../../src/sandbox/process/sandbox-record.ts";
import { usersForRun } from "../../src/sandbox/process/sandbox-users.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from "../../src/sandbox/runtime.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { alive, pooledPids } from "../support/pool.ts";
import { scriptGateway } from "../support/script-gateway.ts";

const quiet = { info: () => undefined, warn: () => undefined };
const signal = () => AbortSignal.timeout(60_000);
const bash = (command: string) => ({ name: "t", script: [{ tool: "bash", args: { command } }, { text: "done" }] });

function pooledRuntime(t: TestContext, size = 1): { rt: ProcessRuntime; dataDir: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-pool-"));
  const models = scriptGateway();
  const rt = models.wrap(createProcessRuntime({ dataDir, logger: quiet, pool: { size } }));
  t.after(async () => {
    rt.diskWatch.close();
    await rt.dispose?.();
    for (const info of await rt.list(signal())) await rt.close(info.sandboxId, signal());
    await models.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { rt, dataDir };
}

/** The control folder of the one sandbox waiting in the pool of `dataDir`. */
function pooledControl(dataDir: string): string {
  const [name] = readdirSync(poolDir(dataDir));
  assert.ok(name, "a sandbox in the pool");
  return layoutAt(join(poolDir(dataDir), name)).control;
}

/** Root's files on the host, one per name, each holding "host file" (under `dir` when given: a hard link needs the same file system). */
function hostVictims<N extends string>(t: TestContext, names: N[], dir = tmpdir()): Record<N, string> {
  const folder = mkdtempSync(join(dir, "victims-"));
  t.after(() => rm(folder, { recursive: true, force: true }));
  return Object.fromEntries(
    names.map((name) => {
      const path = join(folder, name);
      writeFileSync(path, "host file", { mode: 0o644 });
      return [name, path];
    }),
  ) as Record<N, string>;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Provision an agent running `command` with its bash tool, prompt it, and resolve with the tool's output. */
async function runAgent(
  { rt, dataDir }: { rt: ProcessRuntime; dataDir: string },
  command: string,
  extra: { runId?: string; env?: Record<string, string>; limits?: SandboxLimits; network?: boolean } = {},
) {
  const sandboxId = randomUUID();
  const { runId = `run-${randomUUID()}`, ...rest } = extra;
  await rt.provision({ sandboxId, runId, agentId: "agent", spec: bash(command), ...rest }, signal());
  const record = await readRecord(sandboxLayout(dataDir, sandboxId));
  await rt.startHarness(sandboxId, signal());
  const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
  client.hello(0);
  const { toolOutputs } = await client.prompt("go", 60_000);
  client.close();
  return { sandboxId, runId, record, output: toolOutputs.join("\n") };
}

describe("process runtime: a pool of sandboxes started ahead", () => {
  it("an agent takes a ready sandbox: its harness already runs, and its tools run as its run's agent with its spec's env", async (t) => {
    const setup = pooledRuntime(t);
    const { rt, dataDir } = setup;
    await rt.pool!.whenFull(signal());
    const [pooled] = await pooledPids(dataDir);
    assert.ok(pooled !== undefined, "one sandbox ready");
    const { record, runId, output } = await runAgent(setup, 'id -u; id -g; echo "secret=$SECRET"; ls -A /work /tmp', {
      env: { SECRET: "s1" },
    });
    assert.equal(record?.harness?.pid, pooled, "the agent's harness is the one started ahead");
    const users = usersForRun(runId);
    const [uid, gid, secret, ...listing] = output.trim().split("\n");
    assert.equal(uid, String(users.agent));
    assert.equal(gid, String(users.agent));
    assert.equal(secret, "secret=s1");
    assert.deepEqual(
      listing.filter((l) => l !== ""),
      ["/tmp:", "/work:"],
      "empty /work and /tmp",
    );
    // The pool makes another for the next agent.
    await rt.pool!.whenFull(signal());
    assert.notEqual((await pooledPids(dataDir))[0], pooled);
  });

  it("a taken sandbox carries nothing of another spec: env, files in /work and /tmp, sockets, processes", async (t) => {
    const setup = pooledRuntime(t);
    const { rt } = setup;
    await rt.pool!.whenFull(signal());
    // A hostile first agent leaves what it can: files, a listening socket, a process that lives on.
    const planted = await runAgent(
      setup,
      "echo left > /work/left; echo left > /tmp/left; (python3 -c 'import socket,time; s=socket.socket(socket.AF_UNIX); s.bind(\"/tmp/planted.sock\"); s.listen(); time.sleep(600)' &) ; sleep 0.3; ls /tmp",
      { env: { FIRST_SECRET: "one" } },
    );
    assert.match(planted.output, /planted\.sock/, "the first agent's socket was made");
    await rt.pool!.whenFull(signal());
    const second = await runAgent(
      setup,
      'echo "first=$(printenv FIRST_SECRET || echo none)"; ls -A /work /tmp /inputs; cat /proc/net/unix | grep -c planted; ps -e -o comm= | sort | uniq | tr "\\n" " "',
      { env: { SECOND: "two" } },
    );
    const lines = second.output.trim().split("\n");
    assert.equal(lines[0], "first=none");
    assert.deepEqual(
      lines.slice(1, -2).filter((l) => l !== ""),
      ["/inputs:", "/tmp:", "/work:"],
      "nothing in its folders",
    );
    assert.equal(lines.at(-2), "0", "no socket of the first agent is seen");
    assert.doesNotMatch(lines.at(-1) ?? "", /python|sleep/, "no process of the first agent is seen");
    assert.notEqual(second.record?.harness?.pid, planted.record?.harness?.pid, "never the same harness twice");
  });

  it("the agent of a taken sandbox can neither read what its harness was handed nor write beside it", async (t) => {
    const setup = pooledRuntime(t);
    await setup.rt.pool!.whenFull(signal());
    const { record, output } = await runAgent(
      setup,
      "cat /control/take.json; echo read=$?; ls /control; echo list=$?; touch /control/planted; echo write=$?",
      { env: { SECRET: "s" } },
    );
    assert.ok(record?.tag, "taken from the pool");
    const codes = output.split("\n").filter((l) => /^(read|list|write)=/.test(l));
    assert.deepEqual(codes, ["read=1", "list=2", "write=1"]);
    assert.doesNotMatch(output, /"harness"|"env"/, "nothing of take.json shows");
    assert.equal(
      existsSync(join(sandboxLayout(setup.dataDir, record.sandboxId).control, "take.json")),
      false,
      "read once and removed",
    );
    // The control folder ends as a cold sandbox's: the run's harness user's alone, no group access.
    const control = statSync(sandboxLayout(setup.dataDir, record.sandboxId).control);
    assert.equal(control.mode & 0o777, 0o700);
    assert.equal(control.gid, control.uid, "its group is the run's harness user's, not the pool user's");
  });

  it("links planted in a pooled control folder are replaced, never written through or handed over", async (t) => {
    const setup = pooledRuntime(t);
    await setup.rt.pool!.whenFull(signal());
    const [pooled] = await pooledPids(setup.dataDir);
    // What a pool user could leave in its control folder before the take: links to files of the host.
    const control = pooledControl(setup.dataDir);
    const victims = hostVictims(t, ["spec", "take", "other"]);
    for (const [name, victim] of [
      ["spec.json", victims.spec],
      ["take.json", victims.take],
      ["planted", victims.other],
    ] as const) {
      await rm(join(control, name), { force: true });
      symlinkSync(victim, join(control, name));
    }
    const { record, output } = await runAgent(setup, "echo ran", { env: { SECRET: "s" } });
    assert.equal(record?.harness?.pid, pooled, "taken from the pool all the same");
    assert.match(output, /ran/);
    for (const victim of Object.values(victims)) {
      assert.equal(readFileSync(victim, "utf8"), "host file", `${victim} not written`);
      assert.equal(statSync(victim).uid, 0, `${victim} still root's`);
    }
  });

  it("a hard link planted in a pooled control folder fails the take: the agent starts cold and the host file keeps its owner", async (t) => {
    const setup = pooledRuntime(t);
    await setup.rt.pool!.whenFull(signal());
    const [pooled] = await pooledPids(setup.dataDir);
    const victims = hostVictims(t, ["linked"], setup.dataDir);
    linkSync(victims.linked, join(pooledControl(setup.dataDir), "planted"));
    const { record, output } = await runAgent(setup, "echo ran");
    assert.notEqual(record?.harness?.pid, pooled, "not the pooled sandbox");
    assert.equal(record?.tag, undefined, "a cold start");
    assert.match(output, /ran/);
    assert.equal(statSync(victims.linked).uid, 0, "the host file is still root's");
    assert.equal(readFileSync(victims.linked, "utf8"), "host file");
    await until("the refused sandbox closed", async () => !(await pooledPids(setup.dataDir)).includes(pooled!));
  });

  it("what the pool's sandboxes cannot be given afterwards starts cold, and the pool keeps its sandbox", async (t) => {
    const setup = pooledRuntime(t);
    const { rt, dataDir } = setup;
    await rt.pool!.whenFull(signal());
    const [pooled] = await pooledPids(dataDir);
    const sandboxId = randomUUID();
    const limits = { ...DEFAULT_SANDBOX_LIMITS, tmpMiB: 16 };
    await rt.provision({ sandboxId, runId: "r", agentId: "a", spec: bash("true"), limits }, signal());
    assert.equal((await readRecord(sandboxLayout(dataDir, sandboxId)))?.harness, undefined, "not started yet: cold");
    const fits = { sandboxId, runId: "r", agentId: "a", spec: bash("true") };
    assert.equal(rt.pool!.coldReason(fits), undefined);
    assert.equal(rt.pool!.coldReason({ ...fits, network: true }), "a networked spec");
    assert.equal(
      rt.pool!.coldReason({ ...fits, spec: { name: "not a name!", script: [] } }),
      "a spec its harness refuses",
    );
    assert.deepEqual(await pooledPids(dataDir), [pooled]);
  });

  it("a child takes a pooled sandbox with a copy of its parent's files, its own to change", async (t) => {
    const setup = pooledRuntime(t, 2);
    const { rt, dataDir } = setup;
    await rt.pool!.whenFull(signal());
    const parent = await runAgent(setup, "echo from-parent > /work/f");
    await rt.pool!.whenFull(signal());
    const childId = randomUUID();
    const child = {
      sandboxId: childId,
      runId: parent.runId,
      agentId: "child",
      spec: bash("cat /work/f; echo more >> /work/f && echo changed"),
    };
    await rt.fork(parent.sandboxId, child, signal());
    const record = await readRecord(sandboxLayout(dataDir, childId));
    assert.ok(record?.tag, "taken from the pool");
    await rt.startHarness(childId, signal());
    const client = createTestHarnessClient(await rt.connect(childId, signal()));
    client.hello(0);
    const { toolOutputs } = await client.prompt("go", 60_000);
    client.close();
    assert.deepEqual(toolOutputs.join("\n").trim().split("\n"), ["from-parent", "changed"]);
    // A parent that is gone is refused as without a pool, and costs the pool nothing.
    const ready = rt.pool!.ready();
    await assert.rejects(
      rt.fork("no-such-parent", { ...child, sandboxId: randomUUID() }, signal()),
      (err: unknown) => (err as { code?: string }).code === "SANDBOX_NOT_FOUND",
    );
    assert.equal(rt.pool!.ready(), ready);
  });

  it("limits are applied when it is taken", async (t) => {
    const setup = pooledRuntime(t);
    const { rt, dataDir } = setup;
    await rt.pool!.whenFull(signal());
    const limits = { ...DEFAULT_SANDBOX_LIMITS, pids: 40, memoryMiB: 300 };
    const { sandboxId, record } = await runAgent(setup, "true", { limits });
    assert.ok(record?.tag, "taken from the pool");
    const memory = record.limitCgroups!.find((c) => c.controller === "memory")!;
    const pids = record.limitCgroups!.find((c) => c.controller === "pids")!;
    const max = (dir: string, file: string) => readFileSync(join(dir, file), "utf8").trim();
    assert.equal(max(pids.dir, pids.version === 2 ? "pids.max" : "pids.max"), "40");
    assert.equal(
      max(memory.dir, memory.version === 2 ? "memory.max" : "memory.limit_in_bytes"),
      String(300 * 1024 * 1024),
    );
    assert.deepEqual((await readRecord(sandboxLayout(dataDir, sandboxId)))?.limits, limits);
  });

  it("a taken sandbox freezes, hibernates and wakes with its session, and closes leaving nothing", async (t) => {
    const setup = pooledRuntime(t);
    const { rt, dataDir } = setup;
    await rt.pool!.whenFull(signal());
    const { sandboxId, record, runId } = await runAgent(setup, "echo kept > /work/kept");
    assert.ok(record?.tag, "taken from the pool");
    await rt.freeze(sandboxId, signal());
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "frozen");
    await rt.thaw(sandboxId, signal());
    await rt.hibernate(sandboxId, signal());
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "hibernated");
    await until("the pooled harness to end", () => !alive(record.harness!.pid));
    await rt.startHarness(sandboxId, signal());
    const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
    client.hello(0);
    const stats = await client.request({ type: "get_session_stats" });
    assert.equal((stats as { data?: { userMessages?: number } }).data?.userMessages, 1, "the same session");
    client.close();
    const woken = await readRecord(sandboxLayout(dataDir, sandboxId));
    assert.deepEqual(woken?.users, usersForRun(runId), "woken as its run's users");
    await rt.close(sandboxId, signal());
    assert.equal(existsSync(sandboxLayout(dataDir, sandboxId).root), false);
    for (const cgroup of record.limitCgroups ?? [])
      assert.equal(existsSync(cgroup.dir), false, `${cgroup.dir} removed`);
    if (record.cgroupDir) assert.equal(existsSync(record.cgroupDir), false);
  });

  it("a new runtime on the data folder closes the sandboxes an earlier one left in its pool; dispose closes its own", async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-pool-"));
    t.after(() => rm(dataDir, { recursive: true, force: true }));
    const first = createProcessRuntime({ dataDir, logger: quiet, pool: { size: 2 } });
    await first.pool!.whenFull(signal());
    first.diskWatch.close();
    const left = await pooledPids(dataDir);
    assert.equal(left.length, 2);
    // The first daemon died without closing them: the next one, even without a pool, closes them.
    const second = createProcessRuntime({ dataDir, logger: quiet });
    t.after(() => second.diskWatch.close());
    await until("the left sandboxes to be closed", () => left.every((pid) => !alive(pid)));
    await until("the pool folder to be empty", () => readdirSync(poolDir(dataDir)).length === 0);
    const third = createProcessRuntime({ dataDir, logger: quiet, pool: { size: 1 } });
    t.after(() => third.diskWatch.close());
    await third.pool!.whenFull(signal());
    const [own] = await pooledPids(dataDir);
    await third.dispose?.();
    await until("its own to be closed", () => !alive(own!));
    assert.deepEqual(readdirSync(poolDir(dataDir)), []);
  });
});
