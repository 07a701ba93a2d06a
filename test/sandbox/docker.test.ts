import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Docker from "dockerode";
import { isSwarmError } from "../../src/errors.ts";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import { defaultSandboxImage } from "../../src/sandbox/docker/sandbox-image.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  type ProvisionRequest,
  type SandboxLimits,
  type SandboxRuntime,
} from "../../src/sandbox/runtime.ts";
import { whenDocker } from "../support/docker-engine.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { runSandboxContract, type SandboxContractSetup } from "./contract.ts";

const IMAGE = defaultSandboxImage();
const docker = new Docker();
const signal = () => AbortSignal.timeout(60_000);

/** Containers, images and folders a closed sandbox must not leave. */
async function dockerLeaks(dataDir: string, sandboxId: string): Promise<string[]> {
  const label = [`swarmd.sandbox=${sandboxId}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const images = await docker.listImages({ filters: { label } });
  return [
    ...containers.map((c) => `container ${c.Names.join(",")} (${c.State})`),
    ...images.map((i) => `image ${(i.RepoTags ?? [i.Id]).join(",")}`),
    ...(existsSync(join(dataDir, "sandboxes", sandboxId)) ? ["sandbox folder"] : []),
  ];
}

function dockerSetup(): () => Promise<SandboxContractSetup> {
  return async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "swarmd-docker-"));
    const make = () => createDockerRuntime({ dataDir });
    return {
      runtime: make(),
      reopen: async () => make(),
      cleanup: () => rm(dataDir, { recursive: true, force: true }),
      leaks: (sandboxId) => dockerLeaks(dataDir, sandboxId),
      workDir: (sandboxId) => join(dataDir, "sandboxes", sandboxId, "work"),
    };
  };
}

await whenDocker("docker runtime", () => {
  runSandboxContract("docker", dockerSetup());
  describe("docker runtime specifics", () => dockerSpecifics());
});

function dockerSpecifics(): void {
  let dataDir: string;
  let rt: SandboxRuntime;
  const made = new Set<string>();
  const request = (spec: Record<string, unknown>, extra: Partial<ProvisionRequest> = {}): ProvisionRequest => {
    const sandboxId = randomUUID();
    made.add(sandboxId);
    return { sandboxId, runId: `run-${randomUUID()}`, agentId: `agent-${randomUUID()}`, spec, ...extra };
  };
  const containerOf = async (sandboxId: string) => {
    const [found] = await docker.listContainers({ all: true, filters: { label: [`swarmd.sandbox=${sandboxId}`] } });
    assert.ok(found, `a container for ${sandboxId}`);
    return docker.getContainer(found.Id).inspect();
  };
  const runBash = async (runtime: SandboxRuntime, sandboxId: string) => {
    await runtime.startHarness(sandboxId, signal());
    const client = createTestHarnessClient(await runtime.connect(sandboxId, signal()));
    client.hello(0);
    const { toolOutputs } = await client.prompt("go");
    client.close();
    return toolOutputs;
  };

  // The daemon serves each sandbox's model gateway; here the test does, answering each spec's script.
  const models = scriptGateway();
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "swarmd-docker-"));
    rt = models.wrap(createDockerRuntime({ dataDir }));
  });
  after(async () => {
    for (const id of made) await rt.close(id, signal()).catch(() => undefined);
    await models.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const MiB = 1024 ** 2;
  /** The container settings a sandbox with these limits must get. */
  const assertLimits = (host: Docker.ContainerInspectInfo["HostConfig"], limits: SandboxLimits) => {
    assert.equal(host.Memory, limits.memoryMiB * MiB);
    assert.equal(host.MemorySwap, limits.memoryMiB * MiB, "no swap on top of the memory limit");
    assert.equal(host.PidsLimit, limits.pids);
    assert.equal(host.NanoCpus, limits.cpus * 1e9);
    assert.deepEqual(host.Tmpfs, { "/tmp": `rw,nosuid,nodev,size=${limits.tmpMiB}m,mode=1777` });
    assert.deepEqual(host.Ulimits, [{ Name: "fsize", Soft: limits.diskMiB * MiB, Hard: limits.diskMiB * MiB }]);
  };

  it("runs one labelled, limited, unprivileged container per sandbox with no network and only the spec's environment", async (t) => {
    process.env.SWARMD_DAEMON_ONLY = "secret";
    t.after(() => delete process.env.SWARMD_DAEMON_ONLY);
    const limits: SandboxLimits = { pids: 200, memoryMiB: 512, cpus: 0.5, diskMiB: 100, tmpMiB: 32 };
    const req = request(
      {
        name: "t",
        script: [
          {
            tool: "bash",
            args: {
              command: "ls /sys/class/net; echo FOO=$FOO; env | grep -c SWARMD_DAEMON_ONLY; id -u; ulimit -f; true",
            },
          },
          { text: "done" },
        ],
      },
      { env: { FOO: "from spec" }, limits },
    );
    await rt.provision(req, signal());
    const info = await containerOf(req.sandboxId);
    assert.equal(info.Config.Labels["swarmd.run"], req.runId);
    assert.equal(info.Config.Labels["swarmd.agent"], req.agentId);
    assert.match(info.Config.Labels["swarmd.owner"] ?? "", /^[0-9a-f]{16}$/);
    assert.equal(info.Config.Image, IMAGE);
    // Started as root only so that the harness's exec can hold its few capabilities; the idle
    // command becomes the agent's user at once (the containment tests check what the agent has).
    assert.equal(info.Config.User, "0:0");
    assert.deepEqual(info.Config.Cmd?.slice(0, 3), ["/usr/bin/setpriv", "--reuid=65532", "--regid=65532"]);
    assert.deepEqual(info.HostConfig.CapAdd, ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL"]);
    assert.equal(info.HostConfig.NetworkMode, "none");
    assert.equal(info.HostConfig.ReadonlyRootfs, true);
    assert.deepEqual(info.HostConfig.CapDrop, ["ALL"]);
    assert.deepEqual(info.HostConfig.SecurityOpt, ["no-new-privileges"]);
    assertLimits(info.HostConfig, limits);
    const sources = (info.HostConfig.Binds ?? []).map((bind) => bind.split(":")[0] ?? "");
    assert.equal(
      sources.includes(SWARMD_ROOT),
      false,
      "never the whole installation (the default data folder is in it)",
    );
    assert.deepEqual(sources.filter((source) => source.startsWith(`${SWARMD_ROOT}/`)).sort(), [
      `${SWARMD_ROOT}/dist/harness`,
      `${SWARMD_ROOT}/node_modules`,
    ]);
    assert.equal(
      info.Config.Env.some((e) => e.startsWith("FOO=")),
      false,
      "spec env stays out of the container's configuration",
    );

    assert.deepEqual(await runBash(rt, req.sandboxId), [`lo\nFOO=from spec\n0\n65532\n${limits.diskMiB * 1024}\n`]);
  });

  it("applies the default limits to a request that names none", async () => {
    const req = request({ name: "t", script: [] });
    await rt.provision(req, signal());
    assertLimits((await containerOf(req.sandboxId)).HostConfig, DEFAULT_SANDBOX_LIMITS);
  });

  it("forks from the parent's image with a copy of its /work, empty inputs and no image of its own", async () => {
    const parent = request({
      name: "p",
      script: [
        { tool: "bash", args: { command: "echo kept > /work/file; mkdir /work/dir; echo deep > /work/dir/f" } },
        { text: "done" },
      ],
    });
    await rt.provision(parent, signal());
    await rt.writeInputs(parent.sandboxId, { "parent.md": "for the parent only" }, signal());
    await runBash(rt, parent.sandboxId);

    const child = request({
      name: "c",
      script: [
        {
          tool: "bash",
          args: { command: "cat /work/file /work/dir/f; echo more >> /work/file; ls -A /inputs | wc -l" },
        },
        { text: "done" },
      ],
    });
    await rt.fork(parent.sandboxId, child, signal());
    assert.deepEqual(
      await docker.listImages({ filters: { label: [`swarmd.sandbox=${child.sandboxId}`] } }),
      [],
      "no commit, no fork image",
    );
    assert.equal((await containerOf(child.sandboxId)).Image, (await containerOf(parent.sandboxId)).Image);
    assert.deepEqual(
      (await runBash(rt, child.sandboxId)).map((o) => o.replace(/\s+/g, " ").trim()),
      ["kept deep 0"],
      "the child's agent owns its copy",
    );

    await rt.close(child.sandboxId, signal());
    assert.deepEqual(await dockerLeaks(dataDir, child.sandboxId), []);
    assert.equal(
      (await rt.inspect(parent.sandboxId, signal()))?.status,
      "running",
      "closing the child leaves the parent",
    );
  });

  it("reports a container removed behind its back as gone, and close cleans up the rest", async () => {
    const req = request({ name: "t", script: [] });
    await rt.provision(req, signal());
    await docker.getContainer((await containerOf(req.sandboxId)).Id).remove({ force: true });
    assert.equal((await rt.inspect(req.sandboxId, signal()))?.status, "gone");
    assert.equal((await rt.list(signal())).find((i) => i.sandboxId === req.sandboxId)?.status, "gone");
    await assert.rejects(rt.freeze(req.sandboxId, signal()), (err) => isSwarmError(err, "SANDBOX_GONE"));
    await rt.close(req.sandboxId, signal());
    assert.equal(await rt.inspect(req.sandboxId, signal()), undefined);
    assert.deepEqual(await dockerLeaks(dataDir, req.sandboxId), []);
  });

  it("never sees nor touches the containers of another data folder", async () => {
    const req = request({ name: "t", script: [] });
    await rt.provision(req, signal());
    const otherDir = await mkdtemp(join(tmpdir(), "swarmd-docker-other-"));
    try {
      const other = createDockerRuntime({ dataDir: otherDir });
      assert.equal(
        (await other.list(signal())).some((i) => i.sandboxId === req.sandboxId),
        false,
      );
      assert.equal(await other.inspect(req.sandboxId, signal()), undefined);
      await other.close(req.sandboxId, signal());
      await assert.rejects(other.freeze(req.sandboxId, signal()), (err) => isSwarmError(err, "SANDBOX_NOT_FOUND"));
      assert.equal((await rt.inspect(req.sandboxId, signal()))?.status, "running");
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
  });

  it("refuses an image the engine does not have, leaving nothing behind", async () => {
    const req = request({ name: "t", script: [] }, { image: "swarmd-sandbox:no-such-version" });
    await assert.rejects(rt.provision(req, signal()), (err: unknown) => {
      assert.ok(isSwarmError(err, "SANDBOX_PROVISION_FAILED"), String(err));
      assert.match(err.message, /swarmd-sandbox:no-such-version.*make sandbox-image/);
      return true;
    });
    assert.equal(await rt.inspect(req.sandboxId, signal()), undefined);
    assert.deepEqual(await dockerLeaks(dataDir, req.sandboxId), []);
  });

  it("names the engine address it could not reach", async () => {
    const unreachable = createDockerRuntime({ dataDir, docker: { socketPath: "/nonexistent/docker.sock" } });
    await assert.rejects(unreachable.list(signal()), (err: unknown) => {
      assert.ok(isSwarmError(err, "RUNTIME_UNAVAILABLE"), String(err));
      assert.match(err.message, /\/nonexistent\/docker\.sock/);
      return true;
    });
    const [local, ...others] = await unreachable.nodes(signal());
    assert.deepEqual(others, [], "still one node");
    assert.equal(local?.id, "local");
    assert.equal(local?.engine, "unreachable", "answered unreachable, not refused");
    assert.equal(local?.sandboxes, 0);
    assert.match(local?.reason ?? "", /\/nonexistent\/docker\.sock/);
  });
}
