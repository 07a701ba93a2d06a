import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { type DaemonProcess, spawnDaemon } from "../support/daemon-process.ts";

/**
 * Attack: an agent looks for the daemon's own secrets (a provider key in its environment, as a
 * deployment has it) in its environment, its processes and its whole file system. The daemon is a
 * real process with the key in its real environment.
 */
describe("security: the daemon's secrets stay out of every sandbox (process runtime, real daemon)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-secrets-"));
  const [head, tail] = [randomBytes(8).toString("hex"), randomBytes(8).toString("hex")];
  let d: DaemonProcess;
  before(async () => {
    d = await spawnDaemon(dataDir, {
      ANTHROPIC_API_KEY: `sk-ant-${head}${tail}`,
      SWARMD_DAEMON_ONLY: `daemon-${head}${tail}`,
    });
  });
  after(async () => {
    await d.kill("SIGKILL");
    const runtime = createProcessRuntime({ dataDir, logger: { info: () => undefined, warn: () => undefined } });
    for (const s of await runtime.list(AbortSignal.timeout(30_000)))
      await runtime.close(s.sandboxId, AbortSignal.timeout(30_000)).catch(() => undefined);
    runtime.diskWatch.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("finds them in no environment, process and file it can reach", async () => {
    // The value is put together in the command, so the agent's own spec never holds it whole.
    const hunt = [
      `S=${head}; S="\${S}${tail}"`,
      'env | grep -c "$S"',
      'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c "$S"',
      'for dir in /*; do case "$dir" in /proc|/sys|/dev|/usr|/lib*|/bin|/sbin) continue ;; esac; grep -rl "$S" "$dir" 2>/dev/null; done', // the host's read-only system folders aside
      "env | grep -c -E '^(ANTHROPIC_API_KEY|SWARMD_DAEMON_ONLY|SWARM_)'",
      "echo searched",
    ].join("; ");
    const created = await d.call("POST", "/runs", {
      spec: { name: "hunter", script: [{ tool: "bash", args: { command: hunt } }, { text: "{{lastToolResult}}" }] },
      prompt: "go",
    });
    assert.equal(created.status, 202);
    const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=120`);
    assert.equal(result.body.result, "0\n0\n0\nsearched\n", "no count above 0, no file named");
  });
});
