/**
 * Where sandboxes run, against a daemon process on the process runtime: `GET /nodes` (one node,
 * `local`, with the daemon's live sandboxes and the limits they reserve), `swarm nodes`, the
 * bridge's `swarm_list_nodes`, and each agent's `node` in its view: in `GET /runs/:runId` and
 * `GET /agents/:agentId` once provisioned, in its `agent_provisioned` event, and the same after
 * the daemon was killed and started again on its data folder.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { availableParallelism, hostname, totalmem } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { type Bridge, startBridge } from "../bridge/bridge-client.ts";
import { swarm, tempDir } from "../cli/helpers.ts";
import type { Json } from "../support/daemon.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { openEvents } from "../support/sse-client.ts";

const ENV = { SWARM_RUNTIME: "process" };
const MiB = 1024 * 1024;

/** The one node of a single-host runtime, with `sandboxes` live and what their limits add up to. */
const local = (sandboxes: number, reservedCpus: number, reservedMemoryMiB: number) => ({
  id: "local",
  hostname: hostname(),
  state: "ready",
  availability: "active",
  sandboxes,
  cpus: availableParallelism(),
  memoryMiB: Math.floor(totalmem() / MiB),
  reservedCpus,
  reservedMemoryMiB,
  engine: "reachable",
});

describe("nodes and each agent's node, on the process runtime", { timeout: 300_000 }, () => {
  let dir: string;
  let dataDir: string;
  let d: DaemonProcess;
  let bridge: Bridge | undefined;
  let runId: string;
  let root: string;
  let child: string;

  before(async () => {
    dir = tempDir("swarmd-nodes-e2e-");
    dataDir = join(dir, "data");
    d = await spawnDaemon(dataDir, ENV);
  });
  after(async () => {
    await bridge?.close();
    await d?.kill("SIGKILL");
    // Whatever a failed test left running goes with its data folder.
    const runtime = createProcessRuntime({ dataDir, logger: { info: () => undefined, warn: () => undefined } });
    for (const info of await runtime.list(AbortSignal.timeout(30_000)))
      await runtime.close(info.sandboxId, AbortSignal.timeout(30_000));
    rmSync(dir, { recursive: true, force: true });
  });

  const nodes = async () => {
    const answer = await d.call("GET", "/nodes");
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body as { nodes: Json[] };
  };

  it("GET /nodes: one node, local, with no sandbox before any run", async () => {
    assert.deepEqual(await nodes(), { nodes: [local(0, 0, 0)] });
  });

  it("each agent's view names its node once provisioned, and GET /nodes counts their sandboxes and limits", async () => {
    const created = await d.call("POST", "/runs", {
      spec: { name: "root", script: [], limits: { cpus: 0.5, memoryMiB: 256 } },
      keepAlive: true,
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    ({ runId, rootAgentId: root } = created.body);
    const events = await openEvents(d.url, runId);
    try {
      await waitState(d, root, "running");
      const spawned = await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: root,
        spec: { name: "kid", script: [], limits: { cpus: 0.25, memoryMiB: 128 } },
        keepAlive: true,
      });
      assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
      child = spawned.body.agentId;
      await waitState(d, child, "running");

      for (const agentId of [root, child]) {
        const provisioned = await events.waitFor((m) => m.event === "agent_provisioned" && m.data.agentId === agentId);
        assert.equal(provisioned.data.node, "local", "agent_provisioned says where");
        const view = await d.call("GET", `/agents/${agentId}`);
        assert.equal(view.body.node, "local");
        assert.equal("unreachable" in view.body, false, "unreachable is absent while reachable");
      }
    } finally {
      events.close();
    }
    const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      snapshot.agents.map((a: Json) => [a.agentId, a.node, "unreachable" in a]),
      [
        [root, "local", false],
        [child, "local", false],
      ],
    );
    assert.deepEqual(await nodes(), { nodes: [local(2, 0.75, 384)] });
  });

  it("swarm nodes: the node as a table, and --json as the route answers", async () => {
    const env = { SWARM_URL: d.url };
    const json = await swarm(["nodes", "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), await nodes());
    const table = await swarm(["nodes"], env);
    assert.equal(table.code, 0, table.stderr);
    assert.equal(table.stderr, "");
    const memory = `${(384 / 1024).toFixed(1)}/${(Math.floor(totalmem() / MiB) / 1024).toFixed(1)} GiB`;
    assert.deepEqual(
      table.stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(/\s{2,}/)),
      [
        [
          "NODE",
          "HOSTNAME",
          "STATE",
          "AVAILABILITY",
          "ENGINE",
          "SANDBOXES",
          "CPUS (reserved/all)",
          "MEMORY (reserved/all)",
        ],
        ["local", hostname(), "ready", "active", "reachable", "2", `0.75/${availableParallelism()}`, memory],
      ],
    );
    const extra = await swarm(["nodes", "local"], env);
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /^swarm: unexpected argument "local"\nusage: swarm nodes/);
  });

  it("swarm_list_nodes: the route's nodes, in the bridge's words", async () => {
    bridge = await startBridge({ SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") });
    const answer = await bridge.tool("swarm_list_nodes");
    assert.equal(answer.isError, false, answer.text);
    assert.deepEqual(answer.data, await nodes());
    assert.equal(
      answer.text.split("\n")[0],
      "1 node(s): local (ready, active, engine reachable, 2 sandbox(es)).",
      "the summary line the model reads first",
    );
  });

  it("keeps each agent's node across a restart, and counts the sandboxes the restarted daemon took over", async () => {
    await d.kill("SIGKILL");
    d = await spawnDaemon(dataDir, ENV);
    const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      snapshot.agents.map((a: Json) => [a.agentId, a.state, a.node]),
      [
        [root, "running", "local"],
        [child, "running", "local"],
      ],
    );
    assert.equal((await d.call("GET", `/agents/${child}`)).body.node, "local");
    assert.deepEqual(await nodes(), { nodes: [local(2, 0.75, 384)] });

    const deleted = await d.call("DELETE", `/runs/${runId}`);
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    assert.deepEqual(await nodes(), { nodes: [local(0, 0, 0)] }, "closed sandboxes reserve nothing");
    const ended = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      ended.agents.map((a: Json) => [a.state, a.node]),
      [
        ["aborted", "local"],
        ["aborted", "local"],
      ],
      "an ended agent still says where it ran",
    );
  });
});
