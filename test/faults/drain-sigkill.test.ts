/**
 * A drain across a daemon SIGKILL: still draining after the restart, the running turn finishes, and
 * a drain deadline still aborts. On the process and docker runtimes (fault-runtimes.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { spawnDaemon, waitState } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";
import { openEvents } from "../support/sse-client.ts";

await onFaultRuntimes("drain across a daemon SIGKILL", (rt) => {
  it("a drain under way survives the restart: still draining, the turn finishes, and a deadline still aborts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-drain-"));
    const runtime = rt.open(dataDir);
    let daemon = await spawnDaemon(dataDir, rt.env);
    try {
      const start = async (delayMs: number) => {
        const created = await daemon.call("POST", "/runs", {
          spec: { name: "drained", script: [{ text: "made it", delayMs }] },
          prompt: "work",
          keepAlive: true,
        });
        return { runId: created.body.runId as string, agentId: created.body.rootAgentId as string };
      };
      const finishing = await start(3_000);
      const late = await start(120_000);
      await waitState(daemon, finishing.agentId, "running");
      await waitState(daemon, late.agentId, "running");
      assert.equal((await daemon.call("POST", `/agents/${finishing.agentId}/stop`, { mode: "drain" })).status, 202);
      assert.equal(
        (await daemon.call("POST", `/agents/${late.agentId}/stop`, { mode: "drain", drainTimeoutMs: 4_000 })).status,
        202,
      );
      await daemon.kill("SIGKILL");
      daemon = await spawnDaemon(dataDir, rt.env);

      const view = (await daemon.call("GET", `/agents/${finishing.agentId}`)).body;
      assert.equal(view.draining, true, "still draining after the restart");
      assert.equal((await daemon.call("POST", `/agents/${finishing.agentId}/prompt`, { text: "more" })).status, 409);
      await waitState(daemon, finishing.agentId, "done", 60_000);
      assert.equal((await daemon.call("GET", `/agents/${finishing.agentId}/result`)).body.result, "made it");
      await waitState(daemon, late.agentId, "aborted", 60_000);
      for (const [{ runId, agentId }, reason] of [
        [finishing, "drained"],
        [late, "drain-timeout"],
      ] as const) {
        const stream = await openEvents(daemon.url, runId);
        const ended = await stream.waitFor((m) => m.event === "agent_ended" && m.data.agentId === agentId, 30_000);
        stream.close();
        assert.equal(ended.data.reason, reason);
      }
    } finally {
      await daemon.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
