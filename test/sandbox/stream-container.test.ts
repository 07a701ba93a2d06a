import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { PassThrough, type Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import Docker from "dockerode";
import { HARNESS_CAPS, IN_CONTAINER } from "../../src/sandbox/docker/container-options.ts";
import { demuxAttach } from "../../src/sandbox/stream/attach-demux.ts";
import { clusterContainerCommand, clusterImageTag } from "../../src/sandbox/stream/cluster-image.ts";
import { openSandboxStream, type SandboxStream } from "../../src/sandbox/stream/sandbox-stream.ts";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";
import { dockerMissing, dockerUnusable } from "../support/docker-engine.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { streamGateway } from "../support/stream-supervisor.ts";

const docker = new Docker();
const signal = () => AbortSignal.timeout(60_000);
const LABEL = { "swarmd.test": "stream-container" };

/** Run a command in the container as `user` to its end; its stdout. */
async function execOutput(container: Docker.Container, cmd: string[], user: string): Promise<string> {
  const exec = await container.exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true });
  const raw = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => (text += d.toString()));
  docker.modem.demuxStream(raw, out, new PassThrough().resume());
  await new Promise<void>((resolve) => raw.on("end", resolve).on("close", resolve));
  return text;
}

/** Attach to the container's stdio (stdout and stderr demultiplexed) and open the daemon's stream over it. */
async function attach(container: Docker.Container, model: (c: import("node:stream").Duplex) => void) {
  const raw = (await container.attach({
    stream: true,
    stdin: true,
    stdout: true,
    stderr: true,
    hijack: true,
  })) as NodeJS.ReadWriteStream & { destroy(): void };
  let stderr = "";
  const stdout = demuxAttach(raw, (line) => (stderr += `${line}\n`));
  const stream = openSandboxStream({ input: raw as unknown as Writable, output: stdout }, { model });
  return { stream, raw, stderr: () => stderr };
}

const reason = (await dockerUnusable()) ?? (await clusterImageMissing());

async function clusterImageMissing(): Promise<string | undefined> {
  const tag = clusterImageTag();
  const images = await docker.listImages({ filters: { reference: [tag] } });
  return images.length === 0 ? `image ${tag} is missing: run \`make sandbox-image\`` : undefined;
}

if (reason !== undefined) dockerMissing("the cluster image's supervisor over an attach", reason);
else
  describe("the cluster image's supervisor over an attach", () => {
    const id = randomUUID().slice(0, 8);
    const volume = (name: string) => `swarmd-streamtest-${id}-${name}`;
    const volumes = [volume("work"), volume("control"), volume("inputs")];
    let container: Docker.Container;
    const streams: SandboxStream[] = [];
    const script: ScriptStep[] = [
      { tool: "bash", args: { command: "id -u; echo kept > /work/f; cat /inputs/a.md" } },
      { text: "first: {{lastToolResult}}" },
      { tool: "bash", args: { command: "cat /work/f" } },
      { text: "second: {{lastToolResult}}" },
    ];
    let gateway: Awaited<ReturnType<typeof streamGateway>>;

    before(async () => {
      gateway = await streamGateway(script);
      const options: Docker.ContainerCreateOptions = {
        name: `swarmd-streamtest-${id}`,
        Image: clusterImageTag(),
        Cmd: clusterContainerCommand(),
        Entrypoint: [],
        User: "0:0",
        WorkingDir: IN_CONTAINER.work,
        Labels: LABEL,
        OpenStdin: true,
        StdinOnce: false,
        Tty: false,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: {
          Init: true,
          NetworkMode: "none",
          ReadonlyRootfs: true,
          Tmpfs: { [IN_CONTAINER.tmp]: "rw,nosuid,nodev,size=64m,mode=1777" },
          CapDrop: ["ALL"],
          CapAdd: HARNESS_CAPS.map((cap) => `CAP_${cap.toUpperCase()}`),
          SecurityOpt: ["no-new-privileges"],
          // The stream is not the engine's to keep: nothing of it is written to the node's disk.
          LogConfig: { Type: "none", Config: {} },
          Mounts: [
            { Type: "volume", Source: volume("work"), Target: IN_CONTAINER.work },
            { Type: "volume", Source: volume("control"), Target: IN_CONTAINER.control },
            { Type: "volume", Source: volume("inputs"), Target: IN_CONTAINER.inputs },
          ],
        },
      };
      container = await docker.createContainer(options);
    });

    after(async () => {
      for (const s of streams) s.close();
      await container?.remove({ force: true }).catch(() => undefined);
      for (const name of volumes)
        await docker
          .getVolume(name)
          .remove()
          .catch(() => undefined);
      await gateway?.close();
    });

    it("inits, starts, runs a turn, hibernates, wakes, and goes on after a re-attach; no socket, no listener", async () => {
      const one = await attach(container, gateway.model);
      streams.push(one.stream);
      await container.start();
      await one.stream.ready;
      const ask = (s: SandboxStream, op: Parameters<SandboxStream["request"]>[0]) => s.request(op, signal());
      assert.deepEqual(await ask(one.stream, { op: "status" }), {
        ok: true,
        harness: "stopped",
        hibernated: false,
        ended: false,
      });
      const init = { op: "init", spec: { name: "t", script }, model: gateway.modelFile, env: {} } as const;
      assert.deepEqual(await ask(one.stream, init), { ok: true });
      assert.deepEqual(await ask(one.stream, { op: "inputs", files: { "a.md": "from a" } }), { ok: true });
      assert.deepEqual(await ask(one.stream, { op: "start" }), { ok: true }, one.stderr());

      const client = createTestHarnessClient(one.stream.openHarness());
      client.hello(0);
      const first = await client.prompt("go", 60_000);
      assert.equal((first.settled.data as { text: string }).text, "first: 65532\nfrom a", "tools run as the agent");
      const lastHseq = client.events.at(-1)!.hseq;

      // Fresh volumes took the owners the image gives their mount points.
      const owners = await execOutput(container, ["stat", "-c", "%n %u %a", "/work", "/control", "/inputs"], "0:0");
      assert.deepEqual(owners.trim().split("\n"), ["/work 65532 755", "/control 65533 700", "/inputs 65533 755"]);
      const reach = await execOutput(
        container,
        ["sh", "-c", "echo x > /inputs/a.md || echo no-write; ls /control || echo no-read; cat /inputs/a.md"],
        "65532:65532",
      );
      assert.match(
        reach,
        /no-write\nno-read\nfrom a$/,
        "the agent reads its inputs, writes none, and cannot list /control",
      );
      const sockets = await execOutput(
        container,
        ["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune", "-o", "-type", "s", "-print"],
        "65532:65532",
      );
      assert.equal(sockets, "", "no socket file the agent could find");
      const listeners = await execOutput(
        container,
        [
          "sh",
          "-c",
          "cat /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null | awk 'NR>0 && $4==\"0A\"'",
        ],
        "65532:65532",
      );
      assert.equal(listeners, "", "no TCP listener");
      const unixListeners = await execOutput(
        container,
        ["sh", "-c", "awk 'NR>1 && $4==\"00010000\"' /proc/net/unix"],
        "65532:65532",
      );
      assert.equal(unixListeners, "", "no listening Unix socket, abstract ones included");

      assert.deepEqual(await ask(one.stream, { op: "hibernate" }), { ok: true });
      await client.closed;
      assert.deepEqual(await ask(one.stream, { op: "status" }), {
        ok: true,
        harness: "stopped",
        hibernated: true,
        ended: false,
      });

      // The attach drops; a new one finds the supervisor (and the sandbox's state) as it was.
      one.raw.destroy();
      await one.stream.ended;
      const two = await attach(container, gateway.model);
      streams.push(two.stream);
      await two.stream.ready;
      assert.deepEqual(await ask(two.stream, { op: "status" }), {
        ok: true,
        harness: "stopped",
        hibernated: true,
        ended: false,
      });
      assert.deepEqual(await ask(two.stream, init), { ok: true });
      assert.deepEqual(await ask(two.stream, { op: "start" }), { ok: true }, two.stderr());
      const woken = createTestHarnessClient(two.stream.openHarness());
      woken.hello(lastHseq);
      const second = await woken.prompt("again", 60_000);
      assert.equal((second.settled.data as { text: string }).text, "second: kept\n");
      assert.equal(woken.events[0]!.hseq, lastHseq + 1, "the event log went on across the hibernation");
      assert.equal((await container.inspect()).State.Running, true);
    });
  });
