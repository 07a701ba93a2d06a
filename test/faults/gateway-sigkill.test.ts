/**
 * The model gateway across a daemon SIGKILL in the middle of a model call: no `model_usage` lost or
 * counted twice, and the cut-off scripted step answered again in full by the restarted daemon, also
 * when the daemon stays down longer than pi's own retries last. On the process and docker runtimes
 * (fault-runtimes.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { spawnDaemon } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";
import { openEvents } from "../support/sse-client.ts";

await onFaultRuntimes("model gateway across a daemon SIGKILL in the middle of a call", (rt) => {
  it("loses no model_usage event and counts none twice: the cut-off step is answered again after the restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-gateway-kill-"));
    const runtime = rt.open(dataDir);
    let d = await spawnDaemon(dataDir, rt.env);
    try {
      const script = [
        { tool: "bash", args: { command: "echo before" } },
        { text: "slow answer after {{lastToolResult}}", delayMs: 3_000 },
      ];
      const created = (await d.call("POST", "/runs", { spec: { name: "slow", script }, prompt: "go" })).body as {
        runId: string;
        rootAgentId: string;
      };
      const events = await openEvents(d.url, created.runId);
      await events.waitFor((m) => m.event === "tool_end", 60_000);
      events.close();
      await new Promise((r) => setTimeout(r, 800)); // the second step is streaming now
      await d.kill("SIGKILL");
      // Down for longer than pi retries a failed call (~14 s): the harness's call waits for its
      // gateway socket to be served again instead of failing the turn.
      await new Promise((r) => setTimeout(r, 16_000));
      d = await spawnDaemon(dataDir, rt.env);
      const result = await d.call("GET", `/agents/${created.rootAgentId}/result?wait=60`);
      assert.equal(
        result.body.result,
        "slow answer after before\n",
        "the same step, answered in full by the restarted daemon",
      );
      const all = await openEvents(d.url, created.runId);
      await all.waitFor((m) => m.event === "agent_ended", 30_000);
      all.close();
      const usage = all.messages.filter((m) => m.event === "model_usage");
      assert.equal(usage.length, 2, "the first call, and the second once answered in full");
      assert.equal(new Set(usage.map((m) => m.data.callId)).size, 2, "no call counted twice");
      assert.equal((await d.call("GET", `/runs/${created.runId}`)).body.usage.calls, 2);
    } finally {
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
