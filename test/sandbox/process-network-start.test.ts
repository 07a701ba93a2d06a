/**
 * A networked sandbox's `lo` is bubblewrap's alone. slirp4netns's `--configure` used to set `lo` up
 * too, at the moment bwrap reported its child's pid, while that child had yet to add 127.0.0.1 to
 * `lo`: the kernel gives a loopback 127.0.0.1/8 when it goes up, so bwrap's RTM_NEWADDR (NLM_F_EXCL)
 * got EEXIST and the start failed (`bwrap: loopback: Failed RTM_NEWADDR: No child processes`, about
 * 1 start in 200 to 1 in 50 with eight at once; bench/net-start.ts counts them under load).
 * Network rule: nothing is sent anywhere; only namespaces these tests make are configured.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readlinkSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { attachUserNet, stopUserNet, userNetUnavailable } from "../../src/sandbox/network/user-net.ts";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { slowLoopbackBwrap } from "../support/slow-loopback-bwrap.ts";

const quiet = { info: () => undefined, warn: () => undefined };
const signal = () => AbortSignal.timeout(60_000);
const unavailable = userNetUnavailable();

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-net-start-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** `ip` in the network namespace of `pid`, its output. */
const ipIn = (pid: number, args: string[]) =>
  execFileSync("nsenter", [`--net=/proc/${pid}/ns/net`, "--", "ip", ...args], { encoding: "utf8" });

describe("a networked sandbox's loopback", { skip: unavailable }, () => {
  it("is left alone when the user-mode network is attached: down and without an address until bwrap makes it", async (t) => {
    const dir = tempDir(t);
    // A namespace of the test's own, as fresh as bwrap's before its loopback setup.
    const holder: ChildProcess = spawn("unshare", ["--net", "--", "sleep", "60"], { stdio: "ignore" });
    t.after(() => holder.kill("SIGKILL"));
    await once(holder, "spawn");
    const targetPid = holder.pid ?? 0;
    // unshare makes the namespace, then execs sleep: wait until it is in one of its own.
    const inOwnNamespace = () => {
      try {
        return readlinkSync(`/proc/${targetPid}/ns/net`) !== readlinkSync("/proc/self/ns/net");
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 500 && !inOwnNamespace(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(inOwnNamespace(), "the test's namespace is made");
    const sandboxId = randomUUID();
    const userNet = await attachUserNet({ sandboxId, targetPid, logFile: join(dir, "user-net.log"), signal: signal() });
    t.after(() => stopUserNet(sandboxId, userNet));

    const lo = ipIn(targetPid, ["-o", "link", "show", "dev", "lo"]);
    assert.doesNotMatch(lo, /[<,]UP[,>]/, `lo is still down: ${lo}`);
    assert.equal(ipIn(targetPid, ["-o", "-4", "addr", "show", "dev", "lo"]).trim(), "", "lo has no address");
    assert.match(
      ipIn(targetPid, ["-o", "-4", "addr", "show", "dev", "tap0"]),
      /inet 10\.0\.2\.100\/24 brd 10\.0\.2\.255 /,
    );
    assert.match(ipIn(targetPid, ["-o", "link", "show", "dev", "tap0"]), /<BROADCAST,UP,LOWER_UP> mtu 65520 /);
    assert.match(ipIn(targetPid, ["-4", "route", "show", "default"]), /^default via 10\.0\.2\.2 dev tap0/);
  });

  it("is made by bwrap even when bwrap makes it long after the network is attached", async (t) => {
    const dir = tempDir(t);
    const bwrap = slowLoopbackBwrap(dir, 500);
    if (bwrap === undefined) return t.skip("needs strace (to hold bwrap's setup) and bwrap");
    const models = scriptGateway();
    const rt = models.wrap(createProcessRuntime({ dataDir: join(dir, "data"), logger: quiet, bwrap }));
    t.after(async () => {
      for (const info of await rt.list(signal())) await rt.close(info.sandboxId, signal());
      await models.close();
      // strace and the bwrap it traces are the test's own wrapper, outside the sandbox's freezer.
      spawnSync("pkill", ["-KILL", "-f", dir]);
    });
    const sandboxId = randomUUID();
    const command = "cat /proc/net/dev; ip -o -4 addr show dev lo";
    const spec = { name: "t", script: [{ tool: "bash", args: { command } }, { text: "done" }] };
    await rt.provision({ sandboxId, runId: "run", agentId: "agent", spec, network: true }, signal());
    await rt.startHarness(sandboxId, signal());
    const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
    client.hello(0);
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    assert.match(output, /^\s*tap0:/m, output);
    assert.match(output, /lo\s+inet 127\.0\.0\.1\/8 /, output);
  });
});
