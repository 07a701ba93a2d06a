import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { call } from "../support/daemon.ts";
import { freePort, spawnDaemon } from "../support/daemon-process.ts";

/**
 * A machine without bubblewrap, as the daemon sees it: a PATH holding only node, and SWARM_BWRAP
 * (the one binary the runtime may try, instead of /usr/bin, /usr/local/bin and PATH) naming a
 * file that is not there, or one that cannot make namespaces.
 */
function machineWithoutBubblewrap(t: TestContext): { dataDir: string; env: Record<string, string> } {
  const scratch = mkdtempSync(join(tmpdir(), "swarmd-fail-closed-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const bin = join(scratch, "bin");
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, "node"));
  return {
    dataDir: join(scratch, "data"),
    env: { PATH: bin, SWARM_BWRAP: join(scratch, "missing", "bwrap"), SWARM_RUNTIME: "process" },
  };
}

/** Starts `src/main.ts`; resolves with its exit code and output once it exits, or fails when it serves /health instead. */
async function startExpectingExit(
  dataDir: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(SWARMD_ROOT, "src/main.ts")], {
    cwd: SWARMD_ROOT,
    env: {
      ...process.env,
      SWARM_DATA_DIR: dataDir,
      SWARM_HOST: "127.0.0.1",
      SWARM_PORT: String(port),
      SWARM_LOG_LEVEL: "warn",
      SWARM_ISOLATION: "",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const code = await Promise.race([
      exited,
      new Promise<"polling">((resolve) => setTimeout(() => resolve("polling"), 100)),
    ]);
    if (code !== "polling") return { code, output };
    const serving = await call(`http://127.0.0.1:${port}`, "GET", "/health").then(
      (r) => r.status === 200,
      () => false,
    );
    if (serving || Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      assert.fail(
        `the daemon ${serving ? "started and answers /health" : "neither exited nor answered"} without bubblewrap: ${output}`,
      );
    }
  }
}

describe("fail closed: no bubblewrap, no process runtime", () => {
  it("refuses to start, in one line naming bubblewrap and SWARM_ISOLATION=none", async (t) => {
    const { dataDir, env } = machineWithoutBubblewrap(t);
    // Missing, and present but unable to make namespaces (false exits 1 to the probe).
    for (const bwrap of [env.SWARM_BWRAP as string, "/bin/false"]) {
      const { code, output } = await startExpectingExit(dataDir, { ...env, SWARM_BWRAP: bwrap });
      assert.equal(code, 1, output);
      const lines = output.trim().split("\n");
      assert.equal(lines.length, 1, output);
      assert.match(
        lines[0] ?? "",
        /^swarmd: bubblewrap isolation is unavailable: .* is missing or cannot create namespaces here; .*SWARM_ISOLATION=none/,
      );
      assert.ok(lines[0]?.includes(bwrap), `names ${bwrap}: ${output}`);
    }
  });

  it("starts with SWARM_ISOLATION=none, saying once that sandboxes are unisolated", async (t) => {
    const { dataDir, env } = machineWithoutBubblewrap(t);
    const d = await spawnDaemon(dataDir, { ...env, SWARM_ISOLATION: "none" });
    t.after(() => d.kill("SIGTERM"));
    const health = await d.call("GET", "/health");
    assert.deepEqual([health.status, health.body], [200, { ok: true }]);
    const warnings = d
      .output()
      .split("\n")
      .filter((line) => /UNISOLATED/.test(line));
    assert.equal(warnings.length, 1, d.output());
    assert.match(
      warnings[0] ?? "",
      /"level":40,.*"msg":"isolation is turned off: sandboxes run UNISOLATED/,
      "a warning, in the log like every line",
    );
    assert.match(d.output(), /isolation none/, "the runtime says what it chose");
  });
});
