import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  createProcessRuntime,
  type ProcessRuntime,
  type ProcessRuntimeOptions,
} from "../../src/sandbox/process/process-runtime.ts";
import { sandboxLayout } from "../../src/sandbox/process/sandbox-layout.ts";
import { readRecord } from "../../src/sandbox/process/sandbox-record.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from "../../src/sandbox/runtime.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";

const quiet = { info: () => undefined, warn: () => undefined };
const signal = () => AbortSignal.timeout(60_000);
const bash = (command: string) => ({ name: "t", script: [{ tool: "bash", args: { command } }, { text: "done" }] });

function runtimeFor(
  t: TestContext,
  options: Omit<ProcessRuntimeOptions, "dataDir"> = {},
): { rt: ProcessRuntime; dataDir: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-security-"));
  const models = scriptGateway();
  const rt = models.wrap(createProcessRuntime({ dataDir, logger: quiet, ...options }));
  t.after(async () => {
    rt.diskWatch.close();
    for (const info of await rt.list(signal())) await rt.close(info.sandboxId, signal());
    await models.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { rt, dataDir };
}

/** Start a sandbox whose agent runs `command` with its bash tool; resolves with the tool's output. */
async function runInSandbox(
  rt: ProcessRuntime,
  command: string,
  extra: { env?: Record<string, string>; limits?: SandboxLimits } = {},
) {
  const sandboxId = randomUUID();
  await rt.provision({ sandboxId, runId: "run", agentId: "agent", spec: bash(command), ...extra }, signal());
  await rt.startHarness(sandboxId, signal());
  const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
  client.hello(0);
  return { sandboxId, client };
}

/** Wait (30 s at most) for the runtime to stop the sandbox; resolves with the reason it gives. */
async function stoppedFor(rt: ProcessRuntime, sandboxId: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const info = await rt.inspect(sandboxId, signal());
    if (info?.status === "gone") return info.reason ?? "(no reason)";
    assert.ok(Date.now() < deadline, `still ${info?.status} after 30 s`);
    await sleep(100);
  }
}

const limited = (overrides: Partial<SandboxLimits>): SandboxLimits => ({ ...DEFAULT_SANDBOX_LIMITS, ...overrides });

describe("security: process sandboxes (bubblewrap)", () => {
  it("spec variables never reach a host-side process: an LD_PRELOAD library is not loaded on the host", async (t) => {
    const { rt, dataDir } = runtimeFor(t);
    // The attack: a library the agent could have built in /work, named by LD_PRELOAD in a child's spec.
    const marker = join(dataDir, `loaded-on-host-${randomBytes(4).toString("hex")}`);
    const lib = join(dataDir, "evil.so");
    const source = join(dataDir, "evil.c");
    writeFileSync(
      source,
      `#include <stdio.h>\n__attribute__((constructor)) static void hit(void) { FILE *f = fopen("${marker}", "a"); if (f) { fputs("loaded\\n", f); fclose(f); } }\n`,
    );
    try {
      execFileSync("cc", ["-shared", "-fPIC", "-o", lib, source]);
    } catch {
      t.skip("no C compiler to build the attack's library");
      return;
    }
    const secret = `s3cret-${randomBytes(8).toString("hex")}`;
    // The runtime is called directly: the HTTP layer refuses LD_PRELOAD already (child-ceiling test).
    const { sandboxId, client } = await runInSandbox(rt, "echo inside=$SPEC_SECRET", {
      env: { LD_PRELOAD: lib, SPEC_SECRET: secret },
    });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    assert.match(output, new RegExp(`^inside=${secret}$`, "m"), "the spec's variables are set inside the sandbox");
    assert.equal(existsSync(marker), false, "no host-side launch process loaded the library");

    // The host-side process that holds the sandbox (bwrap) carries neither the variables nor their values.
    const record = await readRecord(sandboxLayout(dataDir, sandboxId));
    const pid = record?.harness?.pid;
    assert.ok(pid, "the harness was started");
    const environ = readFileSync(`/proc/${pid}/environ`, "latin1");
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "latin1");
    assert.doesNotMatch(environ, /SPEC_SECRET|LD_PRELOAD/);
    assert.equal(cmdline.includes(secret), false, "the secret is on no host command line");
  });

  it("a bounded fork bomb is stopped by the sandbox's process limit", async (t) => {
    const { rt } = runtimeFor(t);
    // 200 sleeps, far above the limit of 64 yet harmless to the machine if the limit failed. Node
    // reports a refused fork at once (bash would retry it for seconds).
    const bomb = `node -e '
      const { spawn } = require("node:child_process");
      const kids = [];
      for (let i = 0; i < 200; i++) { const c = spawn("sleep", ["20"]); c.on("error", () => {}); if (c.pid) kids.push(c); }
      console.log("started=" + kids.length);
      for (const c of kids) c.kill("SIGKILL");'`;
    const { client } = await runInSandbox(rt, bomb, { limits: limited({ pids: 64 }) });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    const started = Number(/started=(\d+)/.exec(output)?.[1]);
    assert.ok(started > 0 && started < 64, `at most the limit of processes ran at once: ${output}`);
  });

  it("a memory hog is killed inside its sandbox; the harness lives on", async (t) => {
    const { rt } = runtimeFor(t);
    // Stops by itself at 1 GiB, so a missing limit costs the machine a second, not its memory.
    const hog = `node -e 'const a=[]; for (let i=0;i<1024;i++) a.push(Buffer.alloc(1<<20,1)); console.log("survived")'; echo exit=$?`;
    const { sandboxId, client } = await runInSandbox(rt, hog, { limits: limited({ memoryMiB: 384 }) });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    assert.doesNotMatch(output, /^survived$/m);
    assert.match(output, /exit=137/, "killed by the kernel's OOM killer (SIGKILL)");
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "running");
  });

  it("/tmp is a tmpfs of its limited size, and no single file outgrows the disk quota", async (t) => {
    const { rt, dataDir } = runtimeFor(t);
    const command = [
      "head -c 40M /dev/zero > /tmp/big 2>/dev/null; echo tmp=$(( $(stat -c %s /tmp/big) / 1048576 ))",
      "(head -c 40M /dev/zero > /work/big) 2>/dev/null; echo work=$(( $(stat -c %s /work/big) / 1048576 ))",
      'grep "Max file size" /proc/self/limits',
    ].join("; ");
    const { sandboxId, client } = await runInSandbox(rt, command, { limits: limited({ tmpMiB: 16, diskMiB: 24 }) });
    const [output = ""] = (await client.prompt("go")).toolOutputs;
    client.close();
    assert.ok(Number(/tmp=(\d+)/.exec(output)?.[1]) <= 16, output);
    // The write stops at the quota exactly: the agent's processes inherit it, soft and hard, as RLIMIT_FSIZE.
    assert.equal(Number(/work=(\d+)/.exec(output)?.[1]), 24, output);
    assert.match(output, new RegExp(`Max file size\\s+${24 * 1024 * 1024}\\s+${24 * 1024 * 1024}\\s+bytes`), output);
    assert.ok(existsSync(join(sandboxLayout(dataDir, sandboxId).work, "big")));
  });

  it("a sandbox that makes more files than its quota allows (empty ones too) is stopped, saying why", async (t) => {
    const { rt } = runtimeFor(t, { diskWatchIntervalMs: 200 });
    // 20,000 empty files take no blocks, but inodes of the host's file system: above the 16,384 of a 64 MiB quota.
    const flood = "mkdir /work/many && cd /work/many && seq 1 20000 | xargs touch; sleep 30";
    const { sandboxId, client } = await runInSandbox(rt, flood, { limits: limited({ diskMiB: 64 }) });
    void client.prompt("go").catch(() => undefined);
    assert.match(await stoppedFor(rt, sandboxId), /over its file limit: \d+ files and folders of 16384/);
    client.close();
  });

  it("a sandbox that fills more than its disk quota is stopped, saying why", async (t) => {
    const { rt } = runtimeFor(t, { diskWatchIntervalMs: 200 });
    // Many files, each under the per-file limit, together over the quota.
    const filler = "for i in $(seq 1 12); do head -c 4M /dev/zero > /work/fill-$i; done; sleep 30";
    const { sandboxId, client } = await runInSandbox(rt, filler, { limits: limited({ diskMiB: 24 }) });
    void client.prompt("go").catch(() => undefined);
    assert.match(await stoppedFor(rt, sandboxId), /over its disk limit: \d+ MiB used of 24 MiB/);
    client.close();
  });
});
