/**
 * A daemon on the cluster runtime SIGKILLed and started again on the same data folder finds every
 * live sandbox on every node and reattaches: each agent answers its next prompt from the same
 * session and files.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Json } from "../support/daemon.ts";
import { type DaemonProcess, spawnDaemon } from "../support/daemon-process.ts";
import { pollUntil } from "../support/poll.ts";
import { type ClusterSettings, setAvailability, whenCluster } from "../support/test-cluster.ts";

/** Each turn writes the prompt's count into /work and answers with what is there. */
const counting = {
  name: "counting",
  script: [
    { tool: "bash", args: { command: "echo turn >> turns; wc -l < turns" } },
    { text: "{{lastToolResult}}" },
    { tool: "bash", args: { command: "echo turn >> turns; wc -l < turns" } },
    { text: "{{lastToolResult}}" },
  ],
};

await whenCluster("cluster restart", (cluster: ClusterSettings) => {
  describe("a SIGKILLed daemon on the cluster runtime, restarted", { timeout: 300_000 }, () => {
    let dataDir: string;
    let d: DaemonProcess;
    const ids = cluster.nodes.map((n) => n.id);

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "swarmd-cluster-restart-"));
      d = await spawnDaemon(join(dataDir, "data"), { ...cluster.env });
    });
    after(async () => {
      for (const id of ids) await setAvailability(id, "active").catch(() => undefined);
      if (d) {
        for (const run of (await d.call("GET", "/runs")).body?.runs ?? [])
          await d.call("DELETE", `/runs/${run.runId}?purge=true`).catch(() => undefined);
        await d.kill("SIGTERM");
      }
      rmSync(dataDir, { recursive: true, force: true });
    });

    const view = async (agentId: string): Promise<Json> => (await d.call("GET", `/agents/${agentId}`)).body;

    it("reattaches the agents on all three nodes", async () => {
      const agents: string[] = [];
      for (const node of ids) {
        for (const id of ids) await setAvailability(id, id === node ? "active" : "pause");
        const created = await d.call("POST", "/runs", { spec: counting, prompt: "one", keepAlive: true });
        assert.equal(created.status, 202, JSON.stringify(created.body));
        const agentId = created.body.rootAgentId as string;
        const first = await d.call("GET", `/agents/${agentId}/result?wait=90`);
        assert.equal(first.body.result, "1\n");
        assert.equal((await view(agentId)).node, node);
        agents.push(agentId);
      }
      for (const id of ids) await setAvailability(id, "active");

      await d.kill("SIGKILL");
      d = await spawnDaemon(join(dataDir, "data"), { ...cluster.env, SWARM_PORT: new URL(d.url).port });
      for (const [i, agentId] of agents.entries()) {
        const back = await pollUntil(
          () => view(agentId),
          (v) => v.state !== "provisioning",
          "the agent back",
        );
        assert.equal(back.state, "running", `${agentId}: ${JSON.stringify(back)}`);
        assert.equal(back.node, ids[i]);
        assert.equal((await d.call("POST", `/agents/${agentId}/prompt`, { text: "two" })).status, 202);
      }
      for (const agentId of agents) {
        const second = await pollUntil(
          async () => (await d.call("GET", `/agents/${agentId}/result?wait=30`)).body,
          (r) => r.result !== "1\n",
          "the second turn",
          120_000,
        );
        assert.equal(second.result, "2\n", `${agentId}: the same /work after the restart`);
      }
    });
  });
});
