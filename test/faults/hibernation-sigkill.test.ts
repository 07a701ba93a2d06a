/**
 * A hibernated agent across a daemon SIGKILL: still hibernated after the restart, and it wakes with
 * its history at the next prompt. On the process and docker runtimes (fault-runtimes.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { asleep, viewWhen } from "../support/agent-view.ts";
import { spawnDaemon, waitState } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";

const HIBERNATE_AFTER_MS = 300;

await onFaultRuntimes("hibernation across a daemon SIGKILL", (rt) => {
  it("an agent hibernated when the daemon died is still hibernated after the restart, and wakes with its history", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-hibernate-"));
    const runtime = rt.open(dataDir);
    const env = { ...rt.env, SWARM_HIBERNATE_AFTER_MS: String(HIBERNATE_AFTER_MS) };
    const first = await spawnDaemon(dataDir, env);
    let agentId = "";
    try {
      const created = (
        await first.call("POST", "/runs", {
          spec: { name: "sleeper", script: [{ text: "first" }, { text: "second" }] },
          keepAlive: true,
          prompt: "one",
        })
      ).body;
      agentId = created.rootAgentId;
      await waitState(first, agentId, "running");
      assert.equal((await first.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "first");
      await asleep(first.call, agentId);
    } finally {
      await first.kill("SIGKILL");
    }
    const second = await spawnDaemon(dataDir, env);
    try {
      const view = (await second.call("GET", `/agents/${agentId}`)).body;
      assert.equal(view.state, "running");
      assert.equal(view.hibernated, true);
      assert.equal(view.sessionStats?.userMessages, 1);
      await second.call("POST", `/agents/${agentId}/prompt`, { text: "two" });
      await viewWhen(
        second.call,
        agentId,
        (v) => v.sessionStats?.userMessages === 2 && v.sessionStats?.assistantMessages === 2,
        "answered the second prompt with its history",
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; daemon output: ${second.output().slice(-4000)}`);
      });
      await second.call("POST", `/agents/${agentId}/stop`, {});
      await waitState(second, agentId, "aborted");
    } finally {
      await second.kill("SIGTERM");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
