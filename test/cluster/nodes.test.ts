/**
 * The cluster runtime's own behaviour over HTTP, on the test cluster (scripts/test-cluster.sh):
 * where the swarm places sandboxes, forks on one node and across nodes, node availability, a
 * node cut off briefly (unreachable, then reachable, nothing lost or repeated) and one cut off
 * until the swarm calls it down (its agents lost, the others untouched, nothing recreated).
 * One file, in order: the tests change the nodes every other test would use.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestClusterRuntime } from "../support/cluster-runtime.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";
import {
  type ClusterSettings,
  cutLink,
  managerEngine,
  nodeIndex,
  restoreLink,
  setAvailability,
  waitNodeState,
  whenCluster,
} from "../support/test-cluster.ts";

const kept = (name: string) => ({ name, script: [] });
const bash = (name: string, command: string) => ({
  name,
  script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }],
});

await whenCluster("cluster runtime over HTTP", (cluster: ClusterSettings) => {
  describe("cluster runtime over HTTP (3 nodes)", { timeout: 600_000 }, () => {
    let d: Daemon;
    const ids = cluster.nodes.map((n) => n.id);
    const [manager, worker1, worker2] = ids as [string, string, string];

    before(async () => {
      for (const id of ids) await setAvailability(id, "active");
      d = await startDaemon({ runtime: (dataDir) => createTestClusterRuntime(dataDir, { localWaitMs: 2000 }) });
    });
    after(async () => {
      for (const [i] of cluster.nodes.entries()) await restoreLink(i).catch(() => undefined);
      for (const id of ids) await setAvailability(id, "active").catch(() => undefined);
      await d?.stop();
    });

    const view = async (agentId: string): Promise<Json> => (await d.call("GET", `/agents/${agentId}`)).body;
    const result = async (agentId: string, wait = 60): Promise<Json> =>
      (await d.call("GET", `/agents/${agentId}/result?wait=${wait}`)).body;
    const root = async (spec: object, prompt?: string): Promise<{ runId: string; agentId: string }> => {
      const created = await d.call("POST", "/runs", { spec, keepAlive: true, ...(prompt ? { prompt } : {}) });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const running = await pollUntil(
        () => view(created.body.rootAgentId),
        (v) => v.state === "running" || v.state === "done",
        "the root to run",
      );
      assert.equal(running.state, "running", JSON.stringify(running));
      return { runId: created.body.runId, agentId: created.body.rootAgentId };
    };
    const child = async (runId: string, parentAgentId: string, spec: object, prompt?: string): Promise<string> => {
      const spawned = await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId,
        spec,
        keepAlive: true,
        ...(prompt ? { prompt } : {}),
      });
      assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
      return spawned.body.agentId;
    };
    const onlyOn = async (nodeId: string) => {
      for (const id of ids) await setAvailability(id, id === nodeId ? "active" : "pause");
    };

    it("lists the swarm's three nodes, each ready, active, reachable and with the image", async () => {
      // Each node gets the image first (loaded into those that lack it): `reason` says so meanwhile.
      const { status, body } = await pollUntil(
        () => d.call("GET", "/nodes"),
        (r) => r.status !== 200 || r.body.nodes.every((n: Json) => n.reason === undefined),
        "every node usable",
      );
      assert.equal(status, 200);
      assert.deepEqual(body.nodes.map((n: Json) => n.id).sort(), [...ids].sort());
      for (const node of body.nodes) {
        assert.equal(node.state, "ready");
        assert.equal(node.availability, "active");
        assert.equal(node.engine, "reachable", JSON.stringify(node));
        assert.equal(node.reason, undefined, JSON.stringify(node));
        assert.ok(node.cpus > 0 && node.memoryMiB > 0);
      }
    });

    it("places a child on its parent's node, with a copy of the parent's /work", async () => {
      const { runId, agentId } = await root(bash("root", "echo from-the-parent > note; cat note"), "go");
      assert.equal((await result(agentId)).result, "from-the-parent\n");
      const parentNode = (await view(agentId)).node;
      assert.ok(ids.includes(parentNode), `the root's node ${parentNode}`);
      const kid = await child(runId, agentId, bash("kid", "cat note"), "go");
      assert.equal((await result(kid)).result, "from-the-parent\n");
      assert.equal((await view(kid)).node, parentNode, "on its parent's node");
      const nodes = (await d.call("GET", "/nodes")).body.nodes as Json[];
      assert.ok(nodes.find((n) => n.id === parentNode).sandboxes >= 2);
    });

    it("places a child anywhere when its parent's node takes no new sandboxes, and streams /work across", async () => {
      await onlyOn(worker1);
      const { runId, agentId } = await root(bash("root", "mkdir -p d && echo across > d/file; cat d/file"), "go");
      assert.equal((await view(agentId)).node, worker1);
      assert.equal((await result(agentId)).result, "across\n");
      await onlyOn(worker2);
      const kid = await child(runId, agentId, bash("kid", "cat d/file; stat -c %u d/file"), "go");
      assert.equal((await result(kid)).result, "across\n65532\n");
      assert.equal((await view(kid)).node, worker2, "placed where the swarm could");
      // `pause` availability keeps the sandboxes already there: the root is still live.
      assert.equal((await view(agentId)).state, "running");
    });

    it("marks agents on a node it cannot reach unreachable, and goes on with nothing lost or repeated", async () => {
      await onlyOn(worker1);
      const { runId, agentId } = await root(
        {
          name: "slow",
          script: [{ tool: "bash", args: { command: "sleep 6; echo slept" } }, { text: "{{lastToolResult}}" }],
        },
        "go",
      );
      assert.equal((await view(agentId)).node, worker1);
      await new Promise((r) => setTimeout(r, 1000)); // mid-turn: the bash step runs
      // Cut for less than the swarm takes to call the node down (about 3 heartbeats).
      await cutLink(nodeIndex(worker1));
      const cutAt = Date.now();
      try {
        await pollUntil(
          () => view(agentId),
          (v) => v.unreachable === true,
          "unreachable: true",
          15_000,
        );
      } finally {
        await restoreLink(nodeIndex(worker1));
      }
      console.error(`cut for ${Date.now() - cutAt} ms`);
      await pollUntil(
        () => view(agentId),
        (v) => v.unreachable === undefined,
        "reachable again",
        30_000,
      );
      assert.equal((await result(agentId, 120)).result, "slept\n");
      const all = await readEvents(d, runId);
      const types = all.filter((e) => e.agentId === agentId).map((e) => e.type);
      assert.equal(types.filter((t) => t === "agent_unreachable").length, 1, types.join(","));
      assert.equal(types.filter((t) => t === "agent_reachable").length, 1, types.join(","));
      for (const once of ["tool_start", "tool_end", "handle_settled"])
        assert.equal(types.filter((t) => t === once).length, 1, `one ${once}: ${types.join(",")}`);
      const seqs = all.filter((e) => e.agentId === agentId && e.data?.hseq !== undefined).map((e) => e.data.hseq);
      assert.equal(new Set(seqs).size, seqs.length, "no harness event twice");
    });

    it("answers a stop of an unreachable agent at once, and ends it aborted when its node answers again", async () => {
      await onlyOn(worker1);
      const { runId, agentId } = await root(kept("stopped"));
      assert.equal((await view(agentId)).node, worker1);
      await cutLink(nodeIndex(worker1));
      try {
        await pollUntil(
          () => view(agentId),
          (v) => v.unreachable === true,
          "unreachable: true",
          15_000,
        );
        const stopped = await d.call("POST", `/agents/${agentId}/stop`, {});
        assert.equal(stopped.status, 202, JSON.stringify(stopped.body));
        assert.deepEqual(stopped.body.results, [{ agentId, outcome: "applied" }]);
        const pending = await view(agentId);
        assert.equal(pending.unreachable, true, "still unreachable, the stop pending");
        assert.equal(pending.outcome, null);
      } finally {
        await restoreLink(nodeIndex(worker1));
      }
      const ended = await pollUntil(
        () => view(agentId),
        (v) => v.outcome !== null,
        "the stopped agent",
        60_000,
      );
      assert.equal(ended.outcome, "aborted");
      assert.equal(ended.state, "aborted");
      assert.equal(ended.unreachable, undefined);
      const types = (await readEvents(d, runId)).filter((e) => e.agentId === agentId).map((e) => e.type);
      assert.ok(types.indexOf("agent_reachable") < types.indexOf("agent_ended"), types.join(","));
    });

    it("ends the agents of a node the swarm declares down as lost, leaves the others, and recreates nothing", async () => {
      await onlyOn(worker2);
      const doomed = await root(kept("doomed"));
      assert.equal((await view(doomed.agentId)).node, worker2);
      await onlyOn(worker1);
      const safe = await root(bash("safe", "echo safe"));
      assert.equal((await view(safe.agentId)).node, worker1);
      await cutLink(nodeIndex(worker2));
      try {
        await waitNodeState(worker2, "down", 120_000);
        const ended = await pollUntil(
          () => view(doomed.agentId),
          (v) => v.state === "done",
          "the lost agent",
          30_000,
        );
        assert.equal(ended.outcome, "lost");
        assert.match(await endError(d, doomed.runId, doomed.agentId), new RegExp(`${worker2}.*down|down.*${worker2}`));
        // No replacement task anywhere: the swarm starts no other container for it.
        const services = await managerEngine().listServices({ filters: { label: [`swarmd.agent=${doomed.agentId}`] } });
        for (const service of services) {
          const tasks = await managerEngine().listTasks({ filters: { service: [String(service.ID)] } });
          assert.ok(
            tasks.every((t) => t.NodeID === worker2),
            `tasks elsewhere: ${JSON.stringify(tasks.map((t) => t.NodeID))}`,
          );
        }
        assert.equal((await d.call("POST", `/agents/${safe.agentId}/prompt`, { text: "still?" })).status, 202);
        assert.equal((await result(safe.agentId)).result, "safe\n");
      } finally {
        await restoreLink(nodeIndex(worker2));
      }
      await waitNodeState(worker2, "ready", 120_000);
    });

    it("loses the agents of a node set to drain, naming it", async () => {
      await onlyOn(worker1);
      const drained = await root(kept("drained"));
      assert.equal((await view(drained.agentId)).node, worker1);
      for (const id of ids) await setAvailability(id, id === worker1 ? "drain" : "active");
      const ended = await pollUntil(
        () => view(drained.agentId),
        (v) => v.state === "done",
        "the drained agent",
        60_000,
      );
      assert.equal(ended.outcome, "lost");
      assert.match(await endError(d, drained.runId, drained.agentId), new RegExp(`${worker1}.*drain`));
      for (const id of ids) await setAvailability(id, "active");
      assert.ok(manager);
    });
  });
});

/** The error its `agent_ended` event gives. */
async function endError(d: Daemon, runId: string, agentId: string): Promise<string> {
  const ended = (await readEvents(d, runId)).find((e) => e.type === "agent_ended" && e.agentId === agentId);
  return String(ended?.data?.error);
}

async function readEvents(d: Daemon, runId: string): Promise<Json[]> {
  return (await d.ledger.read(runId, 0, 100_000)) as Json[];
}
