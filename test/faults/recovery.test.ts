import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { spawnDaemon, waitState } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { openEvents } from "../support/sse-client.ts";

await onFaultRuntimes("start-up recovery", (rt) => {
  it("keeps a paused agent paused, ends an agent whose sandbox vanished as lost, closes orphan sandboxes, answers pending host calls", {
    timeout: 300_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-recovery-"));
    // The orphan below is started by the test, not a daemon: the test serves its model gateway.
    const models = scriptGateway();
    const runtime = models.wrap(rt.open(dataDir));
    let d = await spawnDaemon(dataDir, rt.env);
    try {
      const run = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
      const spawn = async (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
        (
          await d.call("POST", `/runs/${run.runId}/agents`, {
            parentAgentId: run.rootAgentId,
            spec,
            keepAlive: true,
            ...extra,
          })
        ).body.agentId as string;
      await waitState(d, run.rootAgentId, "running");
      const paused = await spawn({ name: "paused", script: [] });
      const vanishing = await spawn({ name: "vanishing", script: [] });
      const slowDep = await spawn(
        { name: "slow", script: [{ text: "slow result", delayMs: 4_000 }] },
        { prompt: "go" },
      );
      // An agent blocked in await_result, and one that spawns: their host calls straddle the restart.
      const awaiting = await spawn(
        {
          name: "awaiting",
          script: [
            { tool: "await_result", args: { agentId: slowDep, waitSeconds: 60 } },
            { text: "{{lastToolResult}}" },
          ],
        },
        { prompt: "wait" },
      );
      const spawner = await spawn({
        name: "spawner",
        script: [
          { tool: "spawn_agent", args: { spec: { name: "grandchild", script: [] }, prompt: "hi" } },
          { text: "{{lastToolResult}}" },
        ],
      });
      for (const id of [paused, vanishing, awaiting]) await waitState(d, id, "running");
      assert.equal((await d.call("POST", `/agents/${paused}/pause`)).status, 202);
      const events = await openEvents(d.url, run.runId);
      await d.call("POST", `/agents/${spawner}/prompt`, { text: "spawn" });
      await events.waitFor((m) => m.event === "agent_spawned" && m.data.parentAgentId === spawner, 60_000);
      events.close();

      await d.kill("SIGKILL");
      const vanishingSandbox = (await runtime.list(AbortSignal.timeout(10_000))).find((s) => s.agentId === vanishing)!;
      await runtime.close(vanishingSandbox.sandboxId, AbortSignal.timeout(30_000));
      const orphan = randomUUID();
      await runtime.provision(
        { sandboxId: orphan, runId: "r_orphan", agentId: "a_orphan", spec: { name: "orphan", script: [] } },
        AbortSignal.timeout(30_000),
      );
      await runtime.startHarness(orphan, AbortSignal.timeout(60_000));

      d = await spawnDaemon(dataDir, rt.env);
      const pausedView = (await d.call("GET", `/agents/${paused}`)).body;
      assert.equal(pausedView.state, "paused");
      assert.equal((await runtime.inspect(pausedView.sandboxId, AbortSignal.timeout(10_000)))?.status, "frozen");
      assert.equal((await d.call("POST", `/agents/${paused}/resume`)).status, 202);
      assert.equal((await d.call("GET", `/agents/${paused}`)).body.state, "running");

      const lost = (await d.call("GET", `/agents/${vanishing}`)).body;
      assert.deepEqual([lost.state, lost.outcome], ["done", "lost"]);
      const all = await openEvents(d.url, run.runId);
      const ended = await all.waitFor((m) => m.event === "agent_ended" && m.data.agentId === vanishing);
      all.close();
      assert.match(String(ended.data.error), /lost/);

      assert.equal(
        await runtime.inspect(orphan, AbortSignal.timeout(10_000)),
        undefined,
        "the orphan sandbox was closed",
      );
      assert.match(d.output(), new RegExp(`closing sandbox ${orphan}`));

      const awaited = await d.call("GET", `/agents/${awaiting}/result?wait=60`);
      assert.match(awaited.body.result, /slow result/, "await_result was answered after the restart");
      const spawned = await d.call("GET", `/agents/${spawner}/result?wait=60`);
      const children = (await d.call("GET", `/runs/${run.runId}`)).body.agents.filter(
        (a: { parentAgentId: string }) => a.parentAgentId === spawner,
      );
      assert.equal(children.length, 1, "the spawn retried across the restart made one child");
      assert.match(spawned.body.result, new RegExp(children[0].agentId));
      assert.equal((await d.call("DELETE", `/runs/${run.runId}`)).status, 204);
    } catch (err) {
      console.error(`daemon output:\n${d.output()}`);
      throw err;
    } finally {
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      await models.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("SIGTERM closes the server and the ledger cleanly and leaves sandboxes running for the next start", {
    timeout: 180_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-sigterm-"));
    const runtime = rt.open(dataDir);
    let d = await spawnDaemon(dataDir, rt.env);
    try {
      const run = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
      await waitState(d, run.rootAgentId, "running");
      await d.kill("SIGTERM");
      assert.equal(d.child.exitCode, 0, "a clean exit");
      const [sandbox] = await runtime.list(AbortSignal.timeout(10_000));
      assert.equal(sandbox?.status, "running", "the sandbox outlived the daemon");
      d = await spawnDaemon(dataDir, rt.env);
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}`)).body.state, "running");
      await d.call("POST", `/agents/${run.rootAgentId}/prompt`, { text: "still here" });
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body.result, "still here");
      assert.equal((await d.call("DELETE", `/runs/${run.runId}`)).status, 204);
    } finally {
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("a parent waiting only for its children across a restart ends once they do", { timeout: 180_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-waiting-parent-"));
    const runtime = rt.open(dataDir);
    let d = await spawnDaemon(dataDir, rt.env);
    try {
      // Not kept alive: after its turn the root stays only for its live child.
      const run = (
        await d.call("POST", "/runs", {
          spec: { name: "planner", script: [{ tool: "bash", args: { command: "sleep 2" } }, { text: "planned" }] },
          prompt: "plan",
        })
      ).body;
      await waitState(d, run.rootAgentId, "running");
      const child = (
        await d.call("POST", `/runs/${run.runId}/agents`, {
          parentAgentId: run.rootAgentId,
          spec: { name: "helper", script: [] },
          keepAlive: true,
        })
      ).body.agentId as string;
      await waitState(d, child, "running");
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).status, 200);

      await d.kill("SIGTERM");
      d = await spawnDaemon(dataDir, rt.env);
      assert.equal(
        (await d.call("GET", `/agents/${run.rootAgentId}`)).body.state,
        "running",
        "still waiting for its child",
      );
      assert.equal((await d.call("POST", `/agents/${child}/stop`)).status, 202);
      await waitState(d, run.rootAgentId, "done", 30_000);
      assert.equal((await d.call("GET", `/agents/${run.rootAgentId}`)).body.outcome, "success");
    } catch (err) {
      console.error(`daemon output:\n${d.output()}`);
      throw err;
    } finally {
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
