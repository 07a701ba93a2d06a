/**
 * Issue 9, item 3: a networked sandbox (`network: true`) has a network namespace of its own whose
 * only way out is slirp4netns, and never reaches the host's loopback, the host's own addresses or
 * the daemon. On both runtimes, through the runtime API (commands run by the harness's scripted
 * bash tool) and once end to end through a real daemon over HTTP.
 *
 * Network rule of these tests: traffic goes only to loopback (the test's own listeners, the
 * daemon's port, slirp's host alias 10.0.2.2, which slirp turns into the host's loopback) and never
 * to any other address: the host's other addresses are checked in the sandbox's routing table only.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import { taggedUserNets } from "../../src/sandbox/network/user-net.ts";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { whenDocker } from "../support/docker-engine.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";

const signal = () => AbortSignal.timeout(90_000);
const quiet = { info: () => undefined, warn: () => undefined };

/** Tries a TCP connect to each `host:port` argument; prints `<target> CONNECTED|<error code>|TIMEOUT`. */
const PROBE = [
  'const net = require("net");',
  "Promise.all(process.argv.slice(1).map((t) => new Promise((done) => {",
  '  const i = t.lastIndexOf(":"); const host = t.slice(0, i).replace(/^\\[|\\]$/g, "");',
  "  const s = net.connect({ host, port: Number(t.slice(i + 1)) });",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal of the probe's source, run by node -e
  "  const end = (m) => { s.destroy(); done(`PROBE ${t} ${m}`); };",
  '  s.setTimeout(3000, () => end("TIMEOUT")); s.on("connect", () => end("CONNECTED")); s.on("error", (e) => end(e.code));',
  '}))).then((lines) => console.log(lines.join("\\n")));',
].join("\n");
const probe = (targets: string[]) => `node -e '${PROBE}' ${targets.join(" ")}`;

/**
 * Runs `command` only in a network namespace other than the host's, so that these tests send
 * nothing to 10.0.2.2 from the host's own network even when the code under test is broken.
 */
const HOST_NETNS = readlinkSync("/proc/self/ns/net");
const ownNetnsOnly = (command: string) =>
  `if [ "$(readlink /proc/self/ns/net)" = "${HOST_NETNS}" ]; then echo "HOST-NETNS: the sandbox shares the host's network namespace"; else ${command}; fi`;

const section = (output: string, name: string) => output.split(`=== ${name}\n`)[1]?.split("\n=== ")[0] ?? "";
const interfaces = (procNetDev: string) =>
  procNetDev
    .split("\n")
    .slice(2)
    .map((l) => l.split(":")[0]?.trim())
    .filter((n): n is string => Boolean(n))
    .sort();

/** Dotted IPv4 of a /proc/net/route field (little-endian hex). */
const ipv4Of = (hex: string) => [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(".");
const RTF_GATEWAY = 0x2;
const RTF_REJECT = 0x200;

/** /proc/net/route: destinations of host routes that reject (`prohibit`), and whether a default route exists. */
function ipv4Routes(procNetRoute: string): { rejected: Set<string>; hasDefault: boolean } {
  const rows = procNetRoute
    .trim()
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/));
  const rejected = new Set(
    rows
      .filter((r) => (parseInt(r[3] ?? "0", 16) & RTF_REJECT) !== 0 && r[7] === "FFFFFFFF")
      .map((r) => ipv4Of(r[1] ?? "")),
  );
  const hasDefault = rows.some(
    (r) => r[1] === "00000000" && r[7] === "00000000" && (parseInt(r[3] ?? "0", 16) & RTF_GATEWAY) !== 0,
  );
  return { rejected, hasDefault };
}

/** /proc/net/ipv6_route: /128 destinations (32 hex digits) that reject. */
function ipv6Rejected(procNetIpv6Route: string): Set<string> {
  const rows = procNetIpv6Route
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/));
  return new Set(
    rows.filter((r) => r[1] === "80" && (parseInt(r[8] ?? "0", 16) & RTF_REJECT) !== 0).map((r) => r[0] ?? ""),
  );
}

/** An IPv6 address as 32 hex digits, as /proc/net/ipv6_route writes it. */
function expandIpv6(address: string): string {
  const [head = "", tail] = address.replace(/%.*$/, "").split("::");
  const groups = (s: string) => (s ? s.split(":") : []);
  const missing = 8 - groups(head).length - groups(tail ?? "").length;
  const all =
    tail === undefined ? groups(head) : [...groups(head), ...Array<string>(missing).fill("0"), ...groups(tail)];
  return all
    .map((g) => g.padStart(4, "0"))
    .join("")
    .toLowerCase();
}

/** Every address of this host but its loopback ones (inside a sandbox those are the sandbox's own `lo`). */
const hostAddresses = () =>
  Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter((i) => !i.internal)
    .map((i) => ({ address: i.address, v6: i.family === "IPv6" }));

/** A TCP listener on a loopback address, counting the connections that reach it. */
async function loopbackListener(
  host: string,
): Promise<{ port: number; accepted: () => number; close: () => Promise<void> } | undefined> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  try {
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, resolve));
  } catch {
    return undefined; // no such address here (a host without IPv6)
  }
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    accepted: () => accepted,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

function networkSuite(name: string, make: (dataDir: string) => SandboxRuntime): void {
  describe(`networked sandboxes on the ${name} runtime`, () => {
    let dataDir: string;
    let rt: SandboxRuntime;
    // The daemon serves each sandbox's model gateway; here the test does, answering each spec's script.
    const models = scriptGateway();
    before(async () => {
      dataDir = await mkdtemp(join(tmpdir(), "swarmd-net-"));
      rt = models.wrap(make(dataDir));
    });
    after(async () => {
      for (const info of await rt.list(signal())) await rt.close(info.sandboxId, signal());
      await models.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    /** Provision, start and run `command` through the harness's bash tool; the sandbox stays open. */
    const run = async (command: string, network: boolean) => {
      const sandboxId = randomUUID();
      const spec = { name: "net", script: [{ tool: "bash", args: { command } }, { text: "done" }] };
      await rt.provision(
        { sandboxId, runId: `run-${randomUUID()}`, agentId: `agent-${randomUUID()}`, spec, network },
        signal(),
      );
      await rt.startHarness(sandboxId, signal());
      const client = createTestHarnessClient(await rt.connect(sandboxId, signal()));
      client.hello(0);
      const [output = ""] = (await client.prompt("go")).toolOutputs;
      client.close();
      return { sandboxId, output };
    };

    it("gives a sandbox without network only lo", async () => {
      const { output } = await run("echo '=== dev'; cat /proc/net/dev", false);
      assert.deepEqual(interfaces(section(output, "dev")), ["lo"], output);
    });

    it("gives a networked sandbox an address and a default route, yet neither the host's loopback, slirp's host alias nor [::1]", async (t) => {
      const v4 = await loopbackListener("127.0.0.1");
      assert.ok(v4);
      const v6 = await loopbackListener("::1");
      t.after(async () => {
        await v4.close();
        await v6?.close();
      });
      const targets = [`127.0.0.1:${v4.port}`, `10.0.2.2:${v4.port}`, ...(v6 ? [`[::1]:${v6.port}`] : [])];
      const command = `echo '=== dev'; cat /proc/net/dev; echo '=== addresses'; node -e 'console.log(JSON.stringify(require("os").networkInterfaces()))'; echo '=== route'; cat /proc/net/route; echo '=== probe'; ${ownNetnsOnly(probe(targets))}`;
      const { output } = await run(command, true);
      assert.doesNotMatch(output, /HOST-NETNS/);

      const own = interfaces(section(output, "dev")).filter((n) => n !== "lo");
      assert.equal(own.length, 1, `one interface besides lo: ${output}`);
      const addresses =
        (JSON.parse(section(output, "addresses")) as Record<string, { address: string; family: string }[]>)[
          own[0] ?? ""
        ] ?? [];
      assert.ok(
        addresses.some((a) => a.family === "IPv4"),
        `an IPv4 address on ${own[0]}: ${output}`,
      );
      assert.ok(ipv4Routes(section(output, "route")).hasDefault, `a default route: ${output}`);

      const probed = section(output, "probe")
        .split("\n")
        .filter((l) => l.startsWith("PROBE "));
      assert.equal(probed.length, targets.length, output);
      for (const line of probed) assert.doesNotMatch(line, /CONNECTED|TIMEOUT/, "refused at once, never connected");
      assert.equal(v4.accepted() + (v6?.accepted() ?? 0), 0, "no connection reached the host's loopback listeners");
    });

    it("prohibits every address of the host in the sandbox's routing table, and the agent cannot remove a route", async () => {
      const host = hostAddresses();
      const firstV4 = host.find((a) => !a.v6)?.address;
      const remove = firstV4
        ? `${ownNetnsOnly(`ip route del prohibit ${firstV4}/32 2>/dev/null && echo REMOVED || echo KEPT`)};`
        : "";
      const command = `${remove} echo '=== route'; cat /proc/net/route; echo '=== route6'; cat /proc/net/ipv6_route 2>/dev/null; true`;
      const { output } = await run(command, true);
      const { rejected } = ipv4Routes(section(output, "route"));
      const rejected6 = ipv6Rejected(section(output, "route6"));
      assert.ok(rejected.has("10.0.2.2"), `slirp's host alias is prohibited: ${output}`);
      for (const { address, v6 } of host) {
        assert.ok(
          v6 ? rejected6.has(expandIpv6(address)) : rejected.has(address),
          `the host's ${address} is prohibited: ${output}`,
        );
      }
      if (firstV4) assert.match(output, /^KEPT$/m, "no capability over its own namespace");
    });

    it("leaves no slirp4netns behind once closed, also by a restarted service", async () => {
      const first = await run("true", true);
      const second = await run("true", true);
      assert.equal((await taggedUserNets(first.sandboxId)).length, 1, "one slirp4netns per networked sandbox");
      assert.equal((await taggedUserNets(second.sandboxId)).length, 1);
      await rt.close(first.sandboxId, signal());
      assert.deepEqual(await taggedUserNets(first.sandboxId), []);
      assert.equal(
        (await taggedUserNets(second.sandboxId)).length,
        1,
        "closing one sandbox leaves the other's network",
      );

      const restarted = make(dataDir);
      await restarted.close(second.sandboxId, signal());
      assert.deepEqual(await taggedUserNets(second.sandboxId), []);
    });
  });
}

/** The daemon's own port, tried by the agent's bash tool with curl (or busybox wget) and node. */
function daemonSuite(name: string, make: (dataDir: string) => SandboxRuntime): void {
  describe(`a networked agent on the ${name} runtime, through a real daemon`, () => {
    let d: Daemon;
    before(async () => {
      d = await startDaemon({ runtime: make });
    });
    after(() => d.stop());

    it("cannot reach the daemon's API on 127.0.0.1 nor through slirp's host alias", async () => {
      const port = new URL(d.url).port;
      const urls = [`http://127.0.0.1:${port}/health`, `http://10.0.2.2:${port}/health`];
      const http = urls
        .map(
          (u) =>
            `if command -v curl >/dev/null; then curl -s -m 3 -o /dev/null ${u}; else wget -q -T 3 -O /dev/null ${u}; fi && echo "HTTP ${u} REACHED" || echo "HTTP ${u} FAILED";`,
        )
        .join(" ");
      const command = `echo '=== route'; cat /proc/net/route; echo '=== tries'; ${ownNetnsOnly(`${http} ${probe([`127.0.0.1:${port}`, `10.0.2.2:${port}`])}`)}`;
      const spec = {
        name: "net",
        network: true,
        script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }],
      };
      const created = await d.call("POST", "/runs", { spec, prompt: "go" });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=120`);
      assert.equal(result.body.outcome, "success", JSON.stringify(result.body));
      const text = result.body.result as string;
      assert.doesNotMatch(text, /HOST-NETNS/);
      assert.ok(ipv4Routes(section(text, "route")).hasDefault, `the agent has a network (a default route): ${text}`);
      assert.equal(text.match(/^HTTP .* FAILED$/gm)?.length, 2, text);
      assert.equal(text.match(/^PROBE /gm)?.length, 2, text);
      assert.doesNotMatch(text, /REACHED|CONNECTED/, text);
    });
  });
}

const processRuntime = (dataDir: string) => createProcessRuntime({ dataDir, logger: quiet, isolation: "bubblewrap" });
networkSuite("process", processRuntime);
daemonSuite("process", processRuntime);

await whenDocker("networked docker sandboxes", () => {
  const dockerRuntime = (dataDir: string) => createDockerRuntime({ dataDir });
  networkSuite("docker", dockerRuntime);
  daemonSuite("docker", dockerRuntime);
});
