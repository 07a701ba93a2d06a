/**
 * An approval request across a daemon SIGKILL: still pending after the restart, answered once, and
 * the held tool call runs exactly once. On the process and docker runtimes (fault-runtimes.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { inbox, startGatedRun } from "../support/approval-runs.ts";
import { spawnDaemon } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";

await onFaultRuntimes("approvals across a daemon SIGKILL", (rt) => {
  it("a request pending when the daemon dies is still pending after the restart, and the harness gets the answer once", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-approvals-"));
    const runtime = rt.open(dataDir);
    let daemon = await spawnDaemon(dataDir, rt.env);
    try {
      const { runId, agentId } = await startGatedRun(daemon.call, {
        approve: [{ tool: "bash" }],
        script: [
          { tool: "bash", args: { command: "echo once >> /work/ran.txt; cat /work/ran.txt" } },
          { text: "{{lastToolResult}}" },
        ],
      });
      const [request] = await inbox(daemon.call, runId, 1);
      await daemon.kill("SIGKILL");
      daemon = await spawnDaemon(dataDir, rt.env);
      const [still] = await inbox(daemon.call, runId, 1);
      assert.equal(still.requestId, request.requestId);
      assert.deepEqual((await daemon.call("GET", `/agents/${agentId}`)).body.pendingPermissions, [request.requestId]);
      assert.equal(
        (await daemon.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, { decision: "allow" }))
          .status,
        202,
      );
      const settled = (await daemon.call("GET", `/agents/${agentId}/result?wait=60`)).body;
      assert.equal(settled.result.trim(), "once", "the tool ran exactly once");
      const all = (await daemon.call("GET", `/runs/${runId}/permissions?state=all`)).body.permissions;
      assert.equal(all.length, 1, "the re-sent call found its request again");
      const sandboxId = (await daemon.call("GET", `/agents/${agentId}`)).body.sandboxId;
      const ran = readFileSync(join(dataDir, "sandboxes", sandboxId, "work", "ran.txt"), "utf8");
      assert.equal(ran, "once\n");
      await daemon.call("POST", `/agents/${agentId}/stop`, {});
    } finally {
      await daemon.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
