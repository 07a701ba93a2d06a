/**
 * The attack: an agent tags a process of its own sandbox with a neighbour's network tag
 * (`SWARMD_USER_NET=<neighbour's sandbox id>`) and keeps restarting it, so that closing the
 * neighbour chases it forever and never finishes. The daemon's slirp4netns runs in the daemon's pid
 * namespace; a sandboxed process never does, so only the former is taken for the neighbour's.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { after, describe, it } from "node:test";
import { taggedUserNets } from "../../src/sandbox/network/user-net.ts";

describe("security: a sandbox cannot pose as a neighbour's network helper", () => {
  const started: ChildProcess[] = [];
  after(() => {
    for (const p of started) p.kill("SIGKILL");
  });

  const start = async (argv: string[], env: Record<string, string>) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: { PATH: "/usr/bin:/bin", ...env }, stdio: "ignore" });
    started.push(child);
    await once(child, "spawn");
    await new Promise((resolve) => setTimeout(resolve, 200)); // bwrap's sleep is exec'd by now
    return child;
  };

  it("ignores a tagged process in a pid namespace of its own, and finds one in the daemon's", async () => {
    const victim = randomUUID();
    const tag = { SWARMD_USER_NET: victim };
    // As in a sandbox: bwrap itself runs with the daemon's environment, the agent's process inside sets the tag.
    const decoy = await start(
      [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--setenv",
        "SWARMD_USER_NET",
        victim,
        "sleep",
        "30",
      ],
      {},
    );
    const hostSide = await start(["sleep", "30"], tag);
    assert.equal(decoy.exitCode, null, "the decoy sandbox is running");
    assert.deepEqual(
      await taggedUserNets(victim),
      [hostSide.pid],
      "only the process in the daemon's pid namespace counts",
    );
  });
});
