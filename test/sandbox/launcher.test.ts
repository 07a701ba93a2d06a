import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createLauncher, ENDED_UNTOLD, type Launched, type Launcher } from "../../src/sandbox/process/launcher.ts";

const dir = mkdtempSync(join(tmpdir(), "swarmd-launcher-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The launcher processes this test process runs (its children running launcher-main.ts). */
function helperPids(): number[] {
  const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((line) => line.includes("launcher-main.ts"))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

async function endOf(launched: Launched): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const ended = launched.exited();
    if (ended !== undefined) return ended;
    await sleep(10);
  }
  throw new Error(`process ${launched.pid} did not end`);
}

/** A launcher closed when the test ends. */
function launcherFor(t: TestContext): Launcher {
  const launcher = createLauncher();
  t.after(() => launcher.close());
  return launcher;
}

/** `sh -c script` through `launcher`, its output in `output`. */
function shell(launcher: Launcher, script: string, output: string, fdArgs?: string[]): Promise<Launched> {
  const env = { PATH: "/usr/bin:/bin" };
  return launcher.launch({
    file: "/bin/sh",
    args: ["-c", script],
    env,
    cwd: dir,
    output,
    ...(fdArgs ? { fdArgs } : {}),
  });
}

describe("harness launcher", () => {
  it("starts a process with its output in a file, its arguments on descriptor 3, and tells how it ended", async (t) => {
    const output = join(dir, "out-1");
    const launched = await shell(launcherFor(t), 'echo "pid $$"; tr "\\0" "," <&3; exit 3', output, [
      "--setenv",
      "A",
      "b c",
    ]);
    assert.equal(await endOf(launched), "exited with code 3");
    assert.equal(readFileSync(output, "utf8"), `pid ${launched.pid}\n--setenv,A,b c,`);
  });

  it("refuses a program that cannot be started, and starts again after its helper was killed", async (t) => {
    const launcher = launcherFor(t);
    const output = join(dir, "out-2");
    const request = { args: [], env: { PATH: "/usr/bin:/bin" }, cwd: dir, output };
    await assert.rejects(launcher.launch({ ...request, file: join(dir, "no-such-program") }), /ENOENT/);
    const [helper] = helperPids();
    assert.ok(helper, "one helper runs");
    process.kill(helper, "SIGKILL");
    // Until this process reaped it (and so saw it end): a start asked before that fails with its end.
    for (let i = 0; i < 500 && existsSync(`/proc/${helper}`); i++) await sleep(10);
    await sleep(0);
    const launched = await shell(launcher, "exit 0", output);
    assert.equal(await endOf(launched), "exited with code 0");
    assert.notDeepEqual(helperPids(), [helper], "a new helper took over");
  });

  it("tells that a process ended after its helper died, from /proc, so a start does not wait out its deadline", async (t) => {
    const launcher = launcherFor(t);
    const output = join(dir, "out-5");
    const launched = await shell(launcher, "sleep 30", output);
    t.after(() => {
      try {
        process.kill(launched.pid, "SIGKILL");
      } catch {}
    });
    const [helper] = helperPids();
    assert.ok(helper, "one helper runs");
    process.kill(helper, "SIGKILL");
    for (let i = 0; i < 500 && existsSync(`/proc/${helper}`); i++) await sleep(10);
    await sleep(50);
    assert.equal(launched.exited(), undefined, "it still runs: no end is made up");
    process.kill(launched.pid, "SIGKILL");
    assert.equal(await endOf(launched), ENDED_UNTOLD);
  });

  it("runs a command to its end for its output (the disk watch's du), forked by the helper, not the daemon", async (t) => {
    const launcher = launcherFor(t);
    const ran = await launcher.run({
      file: "/bin/sh",
      args: ["-c", 'printf "%s\\0" "$PPID" "two words"'],
      timeoutMs: 10_000,
      maxBytes: 1024,
    });
    assert.equal(ran.error, undefined);
    const [parent, second] = ran.stdout.split("\0");
    assert.ok(helperPids().includes(Number(parent)), `its parent (${parent}) is a helper: ${helperPids().join(" ")}`);
    assert.equal(second, "two words");
    const failed = await launcher.run({
      file: "/bin/sh",
      args: ["-c", "echo partial; exit 1"],
      timeoutMs: 10_000,
      maxBytes: 1024,
    });
    assert.equal(failed.stdout, "partial\n", "what it printed before it failed");
    assert.match(String(failed.error?.message), /Command failed/);
    const missing = await launcher.run({
      file: join(dir, "no-such-program"),
      args: [],
      timeoutMs: 10_000,
      maxBytes: 1024,
    });
    assert.match(String(missing.error?.message), /ENOENT/);
  });

  it("leaves its channel to the daemon out of what it starts: no sandbox can send it a start", async (t) => {
    const output = join(dir, "out-4");
    const launched = await shell(launcherFor(t), "for fd in /proc/self/fd/*; do readlink $fd; done", output);
    await endOf(launched);
    const held = readFileSync(output, "utf8").split("\n").filter(Boolean);
    assert.ok(held.includes(output), `it holds its output: ${held.join(" ")}`);
    assert.deepEqual(
      held.filter((target) => target.startsWith("socket:")),
      [],
      `descriptors: ${held.join(" ")}`,
    );
  });

  it("hands its helper and what it starts nothing of the daemon's environment", async (t) => {
    process.env.SWARMD_TEST_SECRET = "sk-daemon-only";
    t.after(() => delete process.env.SWARMD_TEST_SECRET);
    const launcher = launcherFor(t);
    const output = join(dir, "out-3");
    const launched = await launcher.launch({ file: "/usr/bin/env", args: [], env: { ONLY: "this" }, cwd: dir, output });
    await endOf(launched);
    assert.equal(readFileSync(output, "utf8"), "ONLY=this\n");
    const helpers = helperPids();
    assert.ok(helpers.length > 0);
    for (const pid of helpers) {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
      assert.ok(
        environ.every((entry) => /^(PATH|NODE_CHANNEL_FD|NODE_CHANNEL_SERIALIZATION_MODE)=/.test(entry)),
        `the helper's environment: ${environ.join(" ")}`,
      );
    }
  });
});
