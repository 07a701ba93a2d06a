import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { type Daemon, startDaemon, waitForState } from "../support/daemon.ts";

/**
 * Attack: one agent forks without end, eats memory and fills the disk, all at once. Its sandbox's
 * limits contain it: the daemon keeps answering, another run's agent finishes its turn, and the
 * attacker's agent ends with an error that says which limit stopped it.
 */
describe("security: a sandbox over its limits hurts nobody else (process runtime, over HTTP)", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({
      limits: { pids: 64, memoryMiB: 384, cpus: 0.5, diskMiB: 32, tmpMiB: 16 },
      runtime: (dataDir) =>
        createProcessRuntime({
          dataDir,
          diskWatchIntervalMs: 250,
          logger: { info: () => undefined, warn: () => undefined },
        }),
    });
  });
  after(() => d.stop());

  // Every part stops by itself (16 files, 200 processes, 1 GiB, a minute of CPU), so a failed limit
  // costs the machine little. The last part spins in bash builtins: it needs no fork to go on.
  const attack = [
    "for i in $(seq 1 16); do head -c 4M /dev/zero > /work/fill-$i; done",
    `node -e 'const { spawn } = require("node:child_process"); for (let i = 0; i < 200; i++) spawn("sleep", ["10"]).on("error", () => {})' &`,
    `node -e 'const a = []; for (let i = 0; i < 1024; i++) a.push(Buffer.alloc(1 << 20, 1))' &`,
    "SECONDS=0; while [ $SECONDS -lt 60 ]; do :; done",
  ].join("\n");

  it("the daemon answers, another run completes a turn, and the attacker ends saying why", async () => {
    const attacker = await d.call("POST", "/runs", {
      spec: { name: "attacker", script: [{ tool: "bash", args: { command: attack } }, { text: "done" }] },
      prompt: "go",
    });
    assert.equal(attacker.status, 202);
    await waitForState(d, attacker.body.rootAgentId, "running");

    const started = Date.now();
    const bystander = await d.call("POST", "/runs", {
      spec: {
        name: "bystander",
        script: [{ tool: "bash", args: { command: "echo fine" } }, { text: "{{lastToolResult}}" }],
      },
      prompt: "go",
    });
    assert.equal((await d.call("GET", "/health")).status, 200);
    const result = await d.call("GET", `/agents/${bystander.body.rootAgentId}/result?wait=120`);
    assert.equal(result.body.result, "fine\n");
    assert.ok(Date.now() - started < 120_000);
    assert.equal((await d.call("GET", "/health")).status, 200);

    const deadline = Date.now() + 60_000;
    for (;;) {
      const view = (await d.call("GET", `/agents/${attacker.body.rootAgentId}`)).body;
      if (view.outcome) {
        assert.equal(view.outcome, "lost");
        break;
      }
      assert.ok(Date.now() < deadline, `the attacker is still ${view.state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    let ended: { data: { error?: string } } | undefined;
    for await (const event of d.ledger.iterate(attacker.body.runId, 0))
      if (event.type === "agent_ended") ended = event as never;
    assert.match(ended?.data.error ?? "", /over its disk limit: \d+ MiB used of 32 MiB/);
  });
});
