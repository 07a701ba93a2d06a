/**
 * Containment on every node of the cluster runtime, as an agent's own bash sees it: not root, no
 * capability, a read-only root, no network interface but loopback, no socket anywhere (the
 * harness's protocol and model calls travel over the container's stdio), no engine socket, no
 * control folder it can read, the agent's limits, none of the daemon's secrets; and a networked
 * spec refused with a 400 naming SWARM_CLUSTER_NETWORK.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { DEFAULT_SANDBOX_LIMITS } from "../../src/sandbox/runtime.ts";
import { floodCounts, MEMORY_HOG, PROCESS_FLOOD } from "../support/attacks.ts";
import { createTestClusterRuntime } from "../support/cluster-runtime.ts";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { type ClusterSettings, setAvailability, whenCluster } from "../support/test-cluster.ts";

const SECRET = "sk-ant-api03-cluster-containment-secret";
const PROBE = [
  "echo uid=$(id -u)",
  "echo caps=$(grep CapEff /proc/self/status | cut -f2)",
  "(touch /probe 2>/dev/null && echo root=rw) || echo root=ro",
  'echo nets=$(ls /sys/class/net | tr "\\n" " ")',
  "echo sockets=$(find / -xdev -type s 2>/dev/null | wc -l)",
  "echo sockets-tmp=$(find /tmp /work /inputs -type s 2>/dev/null | wc -l)",
  "(ls /control >/dev/null 2>&1 && echo control=readable) || echo control=closed",
  "(test -e /var/run/docker.sock && echo engine=present) || echo engine=absent",
  `echo secret=$(env | grep -c ${SECRET.slice(0, 12)})`,
  "(kill -0 1 2>/dev/null && echo pid1=signalled) || echo pid1=refused",
  "echo memory=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)",
  "echo pids=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max)",
].join("; ");

await whenCluster("cluster containment", (cluster: ClusterSettings) => {
  describe("containment on the cluster runtime", { timeout: 300_000 }, () => {
    let d: Daemon;
    const ids = cluster.nodes.map((n) => n.id);
    before(async () => {
      process.env.ANTHROPIC_API_KEY = SECRET;
      d = await startDaemon({ runtime: (dataDir) => createTestClusterRuntime(dataDir) });
    });
    after(async () => {
      for (const id of ids) await setAvailability(id, "active").catch(() => undefined);
      await d?.stop();
      delete process.env.ANTHROPIC_API_KEY;
    });

    for (const [index, node] of cluster.nodes.entries()) {
      it(`holds on node ${index}`, async () => {
        for (const id of ids) await setAvailability(id, id === node.id ? "active" : "pause");
        const created = await d.call("POST", "/runs", {
          spec: {
            name: "probe",
            limits: { memoryMiB: 256, pids: 64 },
            script: [{ tool: "bash", args: { command: PROBE } }, { text: "{{lastToolResult}}" }],
          },
          prompt: "probe",
        });
        assert.equal(created.status, 202, JSON.stringify(created.body));
        const agentId = created.body.rootAgentId;
        const { body } = await d.call("GET", `/agents/${agentId}/result?wait=120`);
        const seen = Object.fromEntries(
          String(body.result)
            .trim()
            .split("\n")
            .map((line) => line.split("=").map((s) => s.trim()) as [string, string]),
        );
        assert.equal((await d.call("GET", `/agents/${agentId}`)).body.node, node.id);
        assert.equal(seen.uid, "65532", body.result);
        assert.equal(seen.caps, "0000000000000000", body.result);
        assert.equal(seen.root, "ro");
        assert.equal(seen.nets, "lo", "no network interface but loopback");
        assert.equal(seen.sockets, "0", "no socket in the sandbox's file system");
        assert.equal(seen["sockets-tmp"], "0");
        assert.equal(seen.control, "closed");
        assert.equal(seen.engine, "absent");
        assert.equal(seen.secret, "0", "none of the daemon's keys");
        assert.equal(seen.pid1, "refused");
        assert.equal(seen.memory, String(256 * 1024 * 1024));
        assert.equal(seen.pids, "64");
      });
    }

    /** A run whose root runs `command` with `limits`; the command's output. */
    const runBash = async (command: string, limits?: Record<string, number>): Promise<string> => {
      const created = await d.call("POST", "/runs", {
        spec: {
          name: "attack",
          ...(limits ? { limits } : {}),
          script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }],
        },
        prompt: "go",
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=180`);
      assert.equal(result.body.state, "settled", JSON.stringify(result.body));
      return String(result.body.result);
    };

    it("cannot find another run's secret anywhere in its file system", async () => {
      for (const id of ids) await setAvailability(id, "active");
      const [head, tail] = [randomBytes(8).toString("hex"), randomBytes(8).toString("hex")];
      const victim = await d.call("POST", "/runs", {
        spec: { name: "victim", script: [], env: { VICTIM_API_KEY: head + tail } },
        prompt: "hold",
        keepAlive: true,
      });
      assert.equal(victim.status, 202);
      assert.equal((await d.call("GET", `/agents/${victim.body.rootAgentId}/result?wait=120`)).body.state, "settled");
      const output = await runBash(
        [
          `S=${head}; S="\${S}${tail}"`,
          'for dir in /*; do case "$dir" in /proc|/sys|/dev) continue ;; esac; grep -rl "$S" "$dir" 2>/dev/null; done',
          "echo searched",
        ].join("; "),
      );
      assert.equal(output, "searched\n", "no file holding the other run's secret");
    });

    it("has no capability in any set and no way to gain one", async () => {
      const output = await runBash("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status");
      for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
        assert.match(output, new RegExp(`${cap}:\\s+0{16}\\n`), output);
      assert.match(output, /NoNewPrivs:\s+1/, output);
    });

    it("writes only to /work and /tmp, and cannot signal its supervisor or harness", async () => {
      const output = await runBash(
        [
          "for f in /x /usr/x /etc/passwd /opt/swarmd/x /opt/swarmd/dist/harness/boot.cjs /opt/swarmd/dist/harness/supervisor.cjs /inputs/x /control/x /work/x /tmp/x; do (echo pwned >> $f) 2>/dev/null && echo wrote $f || echo refused $f; done",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: ${p#/proc/} is bash's parameter expansion, not JS
          "for p in /proc/[0-9]*; do grep -qE 'dist/harnes[s]/(boot|supervisor).cjs' $p/cmdline 2>/dev/null && { kill -9 ${p#/proc/} 2>/dev/null && echo killed || echo refused-kill; }; done",
        ].join("; "),
      );
      const refused = [
        "/x",
        "/usr/x",
        "/etc/passwd",
        "/opt/swarmd/x",
        "/opt/swarmd/dist/harness/boot.cjs",
        "/opt/swarmd/dist/harness/supervisor.cjs",
        "/inputs/x",
        "/control/x",
      ];
      assert.equal(
        output,
        `${refused.map((f) => `refused ${f}\n`).join("")}wrote /work/x\nwrote /tmp/x\nrefused-kill\nrefused-kill\n`,
      );
    });

    it("kills a memory hog at the spec's memory limit, stops a process flood at its pids limit, and caps a file and /tmp", async () => {
      const small = { pids: 64, memoryMiB: 256, diskMiB: 64 };
      const hog = await runBash(MEMORY_HOG, small);
      assert.doesNotMatch(hog, /^allocated 1 GiB$/m, hog);
      assert.match(hog, /hog=137/, "the hog is killed by the OOM killer");
      const flooded = await runBash(PROCESS_FLOOD, small);
      const { started: up, refused: down } = floodCounts(flooded);
      assert.ok(up < small.pids && down > 0, `at most ${small.pids} processes: ${flooded}`);
      const fill = (file: string, mib: number) =>
        `dd if=/dev/zero of=${file} bs=1M count=${mib} 2>/dev/null; echo ${file}=$?; rm -f ${file}`;
      const filled = await runBash(
        `${fill("/work/big", small.diskMiB + 8)}; ${fill("/tmp/big", DEFAULT_SANDBOX_LIMITS.tmpMiB + 8)}; ${fill("/work/fits", 8)}`,
        { diskMiB: small.diskMiB },
      );
      assert.match(filled, /\/work\/big=[1-9]/, filled);
      assert.match(filled, /\/tmp\/big=[1-9]/, filled);
      assert.match(filled, /\/work\/fits=0/, filled);
      // The daemon and the other sandboxes are untouched.
      assert.equal(await runBash("echo fine"), "fine\n");
    });

    it("refuses a networked spec with a 400 naming SWARM_CLUSTER_NETWORK", async () => {
      const refused = await d.call("POST", "/runs", { spec: { name: "net", network: true, script: [] } });
      assert.equal(refused.status, 400);
      assert.match(JSON.stringify(refused.body), /SWARM_CLUSTER_NETWORK/);
      assert.ok(
        !(await d.call("GET", "/runs")).body.runs.some((r: { runId: string }) => r.runId === refused.body.runId),
      );
    });
  });
});
