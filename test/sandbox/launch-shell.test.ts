import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { launchShell } from "../../src/sandbox/process/launch-shell.ts";

const dir = mkdtempSync(join(tmpdir(), "swarmd-launch-shell-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Run the launch shell in front of `command`; its exit status and output. */
function launch(options: Parameters<typeof launchShell>[0], command: string) {
  const [file, ...args] = [...launchShell(options), "/bin/sh", "-c", command];
  const run = spawnSync(file!, args, { encoding: "utf8" });
  return { status: run.status, stdout: run.stdout };
}

describe("the harness's launch shell", () => {
  it("sets the file size limit, soft and hard, and writes its pid into every file it joins, then execs the rest", () => {
    const joins = [join(dir, "a.procs"), join(dir, "b.procs")];
    for (const file of joins) writeFileSync(file, "");
    const { status, stdout } = launch(
      { fileSizeBytes: 24 * 1024 * 1024, join: joins },
      'echo "$$"; grep "Max file size" /proc/self/limits',
    );
    assert.equal(status, 0);
    const [pid, limits = ""] = stdout.trim().split("\n");
    // The command is the same process the shell was: exec, not a child.
    for (const file of joins) assert.equal(readFileSync(file, "utf8").trim(), pid);
    assert.match(limits, new RegExp(`Max file size\\s+${24 * 1024 * 1024}\\s+${24 * 1024 * 1024}\\s+bytes`));
  });

  it("starts nothing when a cgroup cannot be joined (exit 111)", () => {
    const marker = join(dir, "ran");
    const folder = join(dir, "not-a-file");
    mkdirSync(folder);
    const { status } = launch({ fileSizeBytes: 1024 * 1024, join: [folder] }, `touch ${marker}`);
    assert.equal(status, 111);
    assert.equal(existsSync(marker), false, "the rest of the chain never ran");
  });
});
