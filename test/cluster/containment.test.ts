/**
 * Containment on every node of the cluster runtime, as an agent's own bash sees it: not root, no
 * capability, a read-only root, no network interface but loopback, no socket anywhere (the
 * harness's protocol and model calls travel over the container's stdio), no engine socket, no
 * control folder it can read, the agent's limits, none of the daemon's secrets; and a networked
 * spec refused with a 400 naming SWARM_CLUSTER_NETWORK.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
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
