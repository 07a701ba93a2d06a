/**
 * Forks across a daemon SIGKILL, on the process and docker runtimes (fault-runtimes.ts): fork
 * children made before the kill keep their conversation and their changes, and can still be
 * compared and adopted after the restart; children whose sandboxes were still being made when the
 * daemon died are made again from their fork point, which outlives the daemon; a purge then leaves
 * nothing of the forks (no fork point, no kept layer, no mount).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { mountsUnder } from "../sandbox/fork-contract.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";
import { pollUntil } from "../support/poll.ts";

const bash = (command: string) => ({ tool: "bash", args: { command } });

async function resultOf(d: DaemonProcess, agentId: string): Promise<string | null> {
  const answer = await d.call("GET", `/agents/${agentId}/result?wait=120`);
  if (answer.body.state !== "settled") throw new Error(`${agentId} did not settle: ${d.output().slice(-3000)}`);
  return answer.body.result;
}

await onFaultRuntimes("forks across a daemon SIGKILL", (rt) => {
  it("fork children keep their conversation and changes across a restart, and half-made ones are made again", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-forks-kill-"));
    const runtime = rt.open(dataDir);
    let first = await spawnDaemon(dataDir, rt.env);
    let runId = "";
    let root = "";
    let made: string[] = [];
    let halfMade: string[] = [];
    const childScript = [
      bash("echo child > /work/child.txt"),
      { text: "first: {{userMessages}}" },
      { text: "again: {{userMessages}}" },
    ];
    try {
      const created = await first.call("POST", "/runs", {
        spec: {
          name: "root",
          script: [
            bash("echo base > /work/base.txt"),
            { text: "ready" },
            bash("cat /work/child.txt; ls -A /work | tr '\\n' ' '"),
            { text: "{{lastToolResult}}" },
          ],
        },
        keepAlive: true,
        prompt: "the password is tangerine",
      });
      runId = created.body.runId;
      root = created.body.rootAgentId;
      assert.equal(await resultOf(first, root), "ready");
      const forked = await first.call("POST", `/agents/${root}/fork`, {
        prompts: ["one", "two"],
        spec: { script: childScript },
      });
      assert.equal(forked.status, 202, JSON.stringify(forked.body));
      made = forked.body.agentIds;
      for (const [i, id] of made.entries())
        assert.equal(await resultOf(first, id), `first: the password is tangerine\n${["one", "two"][i]}`);
      // A second fork, killed before its children's sandboxes exist.
      const second = await first.call("POST", `/agents/${root}/fork`, {
        prompts: ["three"],
        spec: { script: childScript },
      });
      assert.equal(second.status, 202);
      halfMade = second.body.agentIds;
    } finally {
      await first.kill("SIGKILL");
    }

    first = await spawnDaemon(dataDir, rt.env);
    try {
      // Made before the kill: the conversation went on where it was.
      await first.call("POST", `/agents/${made[0]}/prompt`, { text: "after the restart" });
      await pollUntil(
        () => resultOf(first, made[0]!),
        (text) => text?.startsWith("again") === true,
        "the child's second turn",
      );
      assert.equal(await resultOf(first, made[0]!), "again: the password is tangerine\none\nafter the restart");
      // Made again after it: from the same fork point, conversation and files.
      await waitState(first, halfMade[0]!, "running");
      assert.equal(await resultOf(first, halfMade[0]!), "first: the password is tangerine\nthree");
      const view = (await first.call("GET", `/agents/${halfMade[0]}`)).body;
      assert.deepEqual(view.forkedFrom, { agentId: root, forkPoint: { turn: 1 } });

      const changes = await first.call("GET", `/agents/${made[1]}/changes`);
      assert.equal(changes.status, 200, JSON.stringify(changes.body));
      assert.deepEqual(
        changes.body.files.map((f: { path: string; change: string }) => `${f.change} ${f.path}`),
        ["added child.txt"],
      );
      const adopted = await first.call("POST", `/agents/${root}/adopt`, { from: made[1] });
      assert.equal(adopted.status, 200, JSON.stringify(adopted.body));
      await first.call("POST", `/agents/${root}/prompt`, { text: "look" });
      await pollUntil(
        () => resultOf(first, root),
        (text) => text !== "ready",
        "the root's look",
      );
      assert.equal(await resultOf(first, root), "child\nbase.txt child.txt ");

      const purged = await first.call("DELETE", `/runs/${runId}?purge=true`);
      assert.equal(purged.status, 204);
      const forks = join(dataDir, "forks");
      for (const part of ["bases", "layers"])
        assert.deepEqual(existsSync(join(forks, part)) ? readdirSync(join(forks, part)) : [], [], `no ${part} left`);
      assert.deepEqual(await mountsUnder(dataDir), [], "no mount left");
      assert.deepEqual(await rt.leftovers([...made, ...halfMade]), []);
    } finally {
      await first.kill("SIGTERM");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
