/**
 * The sandbox pool over HTTP (`SWARM_POOL_SIZE`, process runtime): agents take sandboxes started
 * ahead, see their own spec's env and nothing of another run's, hibernate and wake, are purged
 * with their run; a daemon killed and started again closes the pooled sandboxes no agent took and
 * goes on with the agents that took one.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime, type ProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { poolDir, sandboxLayout } from "../../src/sandbox/process/sandbox-layout.ts";
import { readRecord } from "../../src/sandbox/process/sandbox-record.ts";
import { asleep, settledWith } from "../support/agent-view.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { spawnDaemon, waitState } from "../support/daemon-process.ts";
import { pollUntil } from "../support/poll.ts";
import { alive, pooledPids } from "../support/pool.ts";

const quiet = { info: () => undefined, warn: () => undefined };
/** A spec whose first turn runs `command` and answers with its output. */
const running = (command: string, env: Record<string, string> = {}): Json => ({
  name: "pooled",
  env,
  script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }, { text: "again" }],
});

describe("sandbox pool over HTTP (process runtime)", () => {
  let d: Daemon;
  let runtime: ProcessRuntime;
  before(async () => {
    d = await startDaemon({
      hibernateAfterMs: 500,
      runtime: (dataDir) => {
        runtime = createProcessRuntime({ dataDir, logger: quiet, pool: { size: 1 } });
        return runtime;
      },
    });
  });
  after(() => d.stop());

  /** A keepAlive run whose root runs `command` with `env`; its root's id, sandbox and result. */
  async function run(command: string, env: Record<string, string> = {}) {
    await runtime.pool!.whenFull(AbortSignal.timeout(60_000));
    const created = await d.call("POST", "/runs", { spec: running(command, env), keepAlive: true, prompt: "go" });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const agentId = created.body.rootAgentId as string;
    const result = await d.call("GET", `/agents/${agentId}/result?wait=60`);
    const view = (await d.call("GET", `/agents/${agentId}`)).body;
    const record = await readRecord(sandboxLayout(d.dataDir, view.sandboxId as string));
    return {
      runId: created.body.runId as string,
      agentId,
      sandboxId: view.sandboxId as string,
      record,
      result: result.body.result as string,
    };
  }

  it("a run's root takes a pooled sandbox; the next run's sees its own env, nothing of the first's", async () => {
    const first = await run('echo "$FIRST"; echo left > /work/left; echo left > /tmp/left', { FIRST: "one" });
    assert.ok(first.record?.tag, "its sandbox was taken from the pool");
    assert.equal(first.result.trim(), "one");
    const second = await run('echo "$(printenv FIRST || echo none) $SECOND"; ls -A /work /tmp', {
      SECOND: "two",
    });
    assert.ok(second.record?.tag, "its sandbox was taken from the pool");
    assert.notEqual(second.record?.tag, first.record?.tag, "never the same sandbox twice");
    assert.deepEqual(
      second.result
        .trim()
        .split("\n")
        .filter((l) => l !== "")
        .sort(),
      ["/tmp:", "/work:", "none two"],
    );
    for (const { runId } of [first, second]) assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204);
  });

  it("a pooled agent hibernates and wakes on a prompt with its session", async () => {
    const { agentId, runId, record } = await run("echo hi");
    assert.ok(record?.tag);
    await asleep(d.call, agentId);
    assert.equal((await d.call("POST", `/agents/${agentId}/prompt`, { text: "more" })).status, 202);
    await settledWith(d.call, agentId, "again");
    assert.equal((await d.call("GET", `/agents/${agentId}`)).body.sessionStats?.userMessages, 2);
    assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204);
  });

  it("a purge removes a pooled sandbox with its run: no folder, no process, no cgroup left", async () => {
    const { runId, sandboxId, record } = await run("echo hi");
    assert.ok(record?.tag);
    assert.equal((await d.call("DELETE", `/runs/${runId}?purge=true`)).status, 204);
    await pollUntil(
      async () => existsSync(sandboxLayout(d.dataDir, sandboxId).root) || alive(record.harness!.pid),
      (left) => !left,
      "the sandbox folder and its harness to go",
    );
    for (const cgroup of record.limitCgroups ?? []) assert.equal(existsSync(cgroup.dir), false, cgroup.dir);
  });
});

describe("sandbox pool across a daemon killed and started again (SWARM_POOL_SIZE)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-pool-restart-"));
  after(() => rm(dataDir, { recursive: true, force: true }));

  it("closes the pooled sandboxes no agent took, and the agent that took one goes on", async () => {
    const first = await spawnDaemon(dataDir, { SWARM_POOL_SIZE: "2" });
    let second: Awaited<ReturnType<typeof spawnDaemon>> | undefined;
    try {
      await pollUntil(
        () => pooledPids(dataDir),
        (p) => p.length === 2,
        "two sandboxes in the pool",
      );
      const created = await first.call("POST", "/runs", {
        spec: running("echo before"),
        keepAlive: true,
        prompt: "go",
      });
      const agentId = created.body.rootAgentId as string;
      assert.equal((await first.call("GET", `/agents/${agentId}/result?wait=60`)).body.result.trim(), "before");
      const sandboxId = (await first.call("GET", `/agents/${agentId}`)).body.sandboxId as string;
      const taken = await readRecord(sandboxLayout(dataDir, sandboxId));
      assert.ok(taken?.tag, "its sandbox was taken from the pool");
      const untaken = await pollUntil(
        () => pooledPids(dataDir),
        (p) => p.length === 2,
        "the pool refilled",
      );
      await first.kill("SIGKILL");

      second = await spawnDaemon(dataDir, { SWARM_POOL_SIZE: "2" });
      await pollUntil(
        async () => untaken.filter(alive),
        (left) => left.length === 0,
        "the untaken sandboxes closed",
      );
      await waitState(second, agentId, "running");
      assert.equal(alive(taken.harness!.pid), true, "the taken sandbox's harness lived on");
      assert.equal((await second.call("POST", `/agents/${agentId}/prompt`, { text: "more" })).status, 202);
      await pollUntil(
        async () => (await second!.call("GET", `/agents/${agentId}/result`)).body.result,
        (result) => result === "again",
        "its second turn",
      );
      await second.call("DELETE", `/runs/${created.body.runId}`);
      // The run's sandbox closes after the answer: the daemon must not stop before it did.
      await pollUntil(
        async () => existsSync(sandboxLayout(dataDir, sandboxId).root) || alive(taken.harness!.pid),
        (left) => !left,
        "the taken sandbox to close with its run",
      );
    } finally {
      await first.kill();
      await second?.kill("SIGTERM");
    }
    // A daemon that stops closes its own pool.
    assert.deepEqual(readdirSync(poolDir(dataDir)), []);
  });
});
