/**
 * Containment of the docker runtime, written as the attacks: an agent's own scripted bash tool
 * tries to read other runs' secrets and the data folder, to act as root, to write outside /work and
 * /tmp, and to take the machine's memory and processes. Through a real daemon process over HTTP
 * (SWARM_RUNTIME=docker, its data folder inside the checkout as `make run` has it), and through the
 * runtime for the limits a request names. Skipped with one line when no engine answers.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  type ProvisionRequest,
  type SandboxLimits,
  type SandboxRuntime,
} from "../../src/sandbox/runtime.ts";
import { floodCounts, MEMORY_HOG, PROCESS_FLOOD } from "../support/attacks.ts";
import { type DaemonProcess, spawnDaemon } from "../support/daemon-process.ts";
import { whenDocker } from "../support/docker-engine.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";

const signal = () => AbortSignal.timeout(120_000);
/** A scripted agent that runs one bash command and answers with its output. */
const bashAgent = (command: string) => ({
  name: "x",
  script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }],
});

// The two suites at once (each its own data folder and containers, its tests one after another):
// the file then takes as long as the longer one.
await whenDocker("docker containment", () => {
  describe("docker containment", { concurrency: true }, () => {
    describe(
      "docker containment: an agent attacking through its own bash tool (real daemon over HTTP)",
      { concurrency: false },
      () => daemonAttacks(),
    );
    describe("docker containment: the limits a request names hold inside the sandbox", { concurrency: false }, () =>
      limitAttacks(),
    );
  });
});

function daemonAttacks(): void {
  // The default data folder lives in the checkout (`./data`): put this daemon's there too.
  const dataDir = join(SWARMD_ROOT, "data", `security-${randomUUID().slice(0, 8)}`);
  let d: DaemonProcess;
  before(async () => {
    mkdirSync(dataDir, { recursive: true });
    d = await spawnDaemon(dataDir, { SWARM_RUNTIME: "docker" });
  });
  after(async () => {
    await d?.kill("SIGTERM");
    await closeOwnedContainers(dataDir);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Start a run whose root runs `command` and resolve with the command's output. */
  const runBash = async (command: string): Promise<string> => {
    const created = await d.call("POST", "/runs", { spec: bashAgent(command), prompt: "go" });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=180`);
    assert.equal(result.body.state, "settled", JSON.stringify(result.body));
    return String(result.body.result);
  };

  it("cannot see the data folder nor find another run's secret anywhere in its file system", async () => {
    // The secret is built from two halves in the attacker's command, so its own spec never holds it whole.
    const [head, tail] = [randomBytes(8).toString("hex"), randomBytes(8).toString("hex")];
    const victim = await d.call("POST", "/runs", {
      spec: { name: "victim", script: [], env: { VICTIM_API_KEY: head + tail } },
      prompt: "hold",
      keepAlive: true,
    });
    assert.equal(victim.status, 202);
    assert.equal(
      (await d.call("GET", `/agents/${victim.body.rootAgentId}/result?wait=120`)).body.state,
      "settled",
      "the victim's sandbox is up",
    );

    const output = await runBash(
      [
        "[ -e /opt/swarmd/data ] && echo data-visible: $(ls /opt/swarmd/data | head -3) || echo data-absent",
        `S=${head}; S="\${S}${tail}"`,
        'for dir in /*; do case "$dir" in /proc|/sys|/dev) continue ;; esac; grep -rl "$S" "$dir" 2>/dev/null; done',
        "echo searched",
      ].join("; "),
    );
    assert.equal(output, "data-absent\nsearched\n", "no data folder, and no file holding the other run's secret");
  });

  it("runs as an unprivileged user with no capabilities and no way to gain any", async () => {
    const output = await runBash(
      "echo uid=$(id -u) gid=$(id -g); grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status",
    );
    const uid = Number(/uid=(\d+)/.exec(output)?.[1]);
    assert.notEqual(uid, 0, output);
    assert.notEqual(uid, process.getuid?.(), "not the daemon's own user");
    for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
      assert.match(output, new RegExp(`${cap}:\\s+0{16}\\n`), output);
    assert.match(output, /NoNewPrivs:\s+1/, output);
  });

  it("cannot write to the root file system, only to /work and /tmp", async () => {
    const output = await runBash(
      "for f in /x /usr/x /etc/passwd /opt/swarmd/x /opt/swarmd/dist/harness/boot.cjs /opt/swarmd/dist/harness/x /inputs/x /work/x /tmp/x; do (echo pwned >> $f) 2>/dev/null && echo wrote $f || echo refused $f; done",
    );
    assert.equal(
      output,
      `${[
        "/x",
        "/usr/x",
        "/etc/passwd",
        "/opt/swarmd/x",
        "/opt/swarmd/dist/harness/boot.cjs",
        "/opt/swarmd/dist/harness/x",
        "/inputs/x",
      ]
        .map((f) => `refused ${f}\n`)
        .join("")}wrote /work/x\nwrote /tmp/x\n`,
    );
  });

  it("cannot signal its harness, replace its socket or touch its control folder", async () => {
    const output = await runBash(
      [
        // biome-ignore lint/suspicious/noTemplateCurlyInString: ${p#/proc/} is bash's parameter expansion, not JS
        "for p in /proc/[0-9]*; do grep -q 'dist/harnes[s]/boot.cjs' $p/cmdline 2>/dev/null && { kill -9 ${p#/proc/} 2>/dev/null && echo killed || echo refused-kill; }; done",
        "rm -f /control/harness.sock 2>/dev/null && echo removed-socket || echo refused-rm",
        "(echo x > /control/planted) 2>/dev/null && echo planted || echo refused-write",
        "ls /control >/dev/null 2>&1 && echo listed || echo refused-list",
      ].join("; "),
    );
    assert.equal(output, "refused-kill\nrefused-rm\nrefused-write\nrefused-list\n");
  });

  it("fills /tmp only up to its size", async () => {
    const mib = DEFAULT_SANDBOX_LIMITS.tmpMiB + 10;
    const output = await runBash(
      `dd if=/dev/zero of=/tmp/fill bs=1M count=${mib} 2>/dev/null; echo dd=$?; rm -f /tmp/fill`,
    );
    assert.match(output, /^dd=[1-9]\d*\n$/, `writing ${mib} MiB into /tmp must fail`);
  });
}

function limitAttacks(): void {
  let dataDir: string;
  let rt: SandboxRuntime;
  /**
   * A runtime whose disk watch does not run while a test looks at the per-file limit alone: a file
   * that stops at that limit (the quota) puts the sandbox over its quota with its other files until
   * it is removed, and a watch round in between would stop the sandbox mid-turn, rightly.
   */
  let rtNoWatch: SandboxRuntime;
  let noWatchDir: string;
  const made = new Set<string>();
  const small: SandboxLimits = { pids: 64, memoryMiB: 256, cpus: 0.5, diskMiB: 64, tmpMiB: 16 };
  const request = (spec: Record<string, unknown>, limits?: SandboxLimits): ProvisionRequest => {
    const sandboxId = randomUUID();
    made.add(sandboxId);
    return { sandboxId, runId: `run-${randomUUID()}`, agentId: `agent-${randomUUID()}`, spec, limits };
  };
  /** Provision, start and prompt once; the client stays open for more prompts. */
  const started = async (spec: Record<string, unknown>, limits?: SandboxLimits, on = rt) => {
    const req = request(spec, limits);
    await on.provision(req, signal());
    await on.startHarness(req.sandboxId, signal());
    const client = createTestHarnessClient(await on.connect(req.sandboxId, signal()));
    client.hello(0);
    return { req, client };
  };
  /** After an attack, the attacked harness still answers, and so does a neighbour with default limits. */
  const stillServing = async (attacked: Awaited<ReturnType<typeof started>>) => {
    const neighbour = await started(bashAgent("echo neighbour fine"));
    assert.deepEqual((await neighbour.client.prompt("go", 60_000)).toolOutputs, ["neighbour fine\n"]);
    neighbour.client.close();
    const state = await attacked.client.request({ type: "get_state" });
    assert.equal(state.success, true, "the attacked sandbox's harness survived its agent's attack");
  };

  // The daemon serves each sandbox's model gateway; here the test does, answering each spec's script.
  const models = scriptGateway();
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "swarmd-containment-"));
    rt = models.wrap(createDockerRuntime({ dataDir, diskWatchIntervalMs: 250, log: () => undefined }));
    noWatchDir = await mkdtemp(join(tmpdir(), "swarmd-containment-"));
    rtNoWatch = models.wrap(
      createDockerRuntime({ dataDir: noWatchDir, diskWatchIntervalMs: 3_600_000, log: () => undefined }),
    );
  });
  after(async () => {
    for (const id of made) {
      await rt.close(id, signal()).catch(() => undefined);
      await rtNoWatch.close(id, signal()).catch(() => undefined);
    }
    await models.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(noWatchDir, { recursive: true, force: true });
  });

  it("kills a memory hog inside its sandbox at the request's memory limit", async () => {
    const attacked = await started(bashAgent(MEMORY_HOG), small);
    const { toolOutputs } = await attacked.client.prompt("go", 90_000);
    const [output = ""] = toolOutputs;
    assert.doesNotMatch(output, /^allocated 1 GiB$/m, output);
    assert.match(
      output,
      /Killed[\s\S]*\nhog=137\n?$/,
      "the hog is killed (SIGKILL from the OOM killer), not allowed 1 GiB",
    );
    await stillServing(attacked);
    attacked.client.close();
  });

  it("stops a process flood at the request's process limit", async () => {
    const attacked = await started(bashAgent(PROCESS_FLOOD), small);
    const [output = ""] = (await attacked.client.prompt("go", 90_000)).toolOutputs;
    const { started: up, refused: down } = floodCounts(output);
    assert.ok(up < small.pids && down > 0, `at most ${small.pids} processes: ${output}`);
    await stillServing(attacked);
    attacked.client.close();
  });

  it("keeps one file below the disk quota and /tmp at its size", async () => {
    const fill = (file: string, mib: number) =>
      `dd if=/dev/zero of=${file} bs=1M count=${mib} 2>/dev/null; echo ${file}=$?; rm -f ${file}`;
    const attacked = await started(
      bashAgent(
        `${fill("/work/big", small.diskMiB + 8)}; ${fill("/tmp/big", small.tmpMiB + 8)}; ${fill("/work/fits", 8)}`,
      ),
      small,
      rtNoWatch,
    );
    const [output = ""] = (await attacked.client.prompt("go", 90_000)).toolOutputs;
    assert.match(output, /\/work\/big=[1-9]/, output);
    assert.match(output, /\/tmp\/big=[1-9]/, output);
    assert.match(output, /\/work\/fits=0/, output);
    await stillServing(attacked);
    attacked.client.close();
  });

  it("stops a sandbox whose files together outgrow its disk quota, saying why", async () => {
    // Each file under the per-file limit, twelve of them over the quota of 64 MiB.
    const filler =
      "for i in $(seq 1 12); do dd if=/dev/zero of=/work/fill-$i bs=1M count=8 2>/dev/null; done; sleep 60";
    const attacked = await started(bashAgent(filler), small);
    void attacked.client.prompt("go", 90_000).catch(() => undefined);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const info = await rt.inspect(attacked.req.sandboxId, signal());
      if (info?.status === "gone") {
        assert.match(info.reason ?? "", /over its disk limit: \d+ MiB used of 64 MiB/);
        break;
      }
      assert.ok(Date.now() < deadline, `still ${info?.status} after 60 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
    attacked.client.close();
  });
}

/** Containers a killed daemon left for its data folder (a SIGTERM'd daemon leaves its sandboxes, by design). */
async function closeOwnedContainers(dataDir: string): Promise<void> {
  const rt = createDockerRuntime({ dataDir });
  for (const sandbox of await rt.list(signal()).catch(() => []))
    await rt.close(sandbox.sandboxId, signal()).catch(() => undefined);
}
