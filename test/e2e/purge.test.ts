import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createRuntime, type Daemon, sandboxRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { keysNaming, rawLedgerKeys } from "../support/raw-ledger.ts";
import { openEvents } from "../support/sse-client.ts";

/** A root that ran a bash command and a kept-alive child: results, sandboxes and every kind of key. */
async function twoAgentRun(d: Daemon, name: string) {
  const script = [
    { tool: "bash", args: { command: `echo ${name} > f.txt; cat f.txt` } },
    { text: "said {{lastToolResult}}" },
  ];
  const created = await d.call("POST", "/runs", { spec: { name, script }, prompt: "go", keepAlive: true });
  assert.equal(created.status, 202);
  const { runId, rootAgentId: root } = created.body;
  assert.equal((await d.call("GET", `/agents/${root}/result?wait=60`)).body.result, `said ${name}\n`);
  const spawned = await d.call("POST", `/runs/${runId}/agents`, {
    parentAgentId: root,
    spec: { name: `${name}-kid`, script: [] },
    prompt: `hi ${name}`,
    keepAlive: true,
    idempotencyKey: "k1",
  });
  const child = spawned.body.agentId as string;
  assert.equal((await d.call("GET", `/agents/${child}/result?wait=60`)).body.result, `hi ${name}`);
  await waitForState(d, child, "running");
  const sandboxIds = (await d.call("GET", `/runs/${runId}`)).body.agents.map(
    (a: { sandboxId: string }) => a.sandboxId,
  ) as string[];
  return { runId, root, child, sandboxIds, ids: [runId, root, child] };
}

/** On a real runtime: a purge removes sandbox folders too, which the simulated runtime has none of (test/service/purge.ts has the rest there). */
const onProcess = (dataDir: string) => startDaemon({ dataDir, runtime: (dir) => createRuntime(sandboxRuntime(), dir) });

describe("DELETE /runs/:runId?purge=true over HTTP (process sandboxes, scripted agents)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-purge-"));
  let d: Daemon | undefined;
  after(async () => {
    await d?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("ends the run as a delete does, then removes everything of it and nothing of another run; a restart does not bring it back", {
    timeout: 300_000,
  }, async () => {
    d = await onProcess(dataDir);
    const gone = await twoAgentRun(d, "gone");
    const kept = await twoAgentRun(d, "kept");
    const keptEvents = await openEvents(d.url, kept.runId);
    const watcher = await openEvents(d.url, gone.runId);
    await watcher.waitFor((m) => m.event === "handle_settled" && m.data.agentId === gone.child);
    for (const id of [...gone.sandboxIds, ...kept.sandboxIds])
      assert.ok(existsSync(join(dataDir, "sandboxes", id)), `sandbox folder ${id} exists`);

    const purged = await d.call("DELETE", `/runs/${gone.runId}?purge=true`);
    assert.equal(purged.status, 204);
    assert.equal(purged.body, undefined);
    assert.equal(purged.headers["content-type"], undefined);

    // The run was ended as a delete ends it (its watcher saw both agents aborted), then its stream was ended.
    await watcher.waitUntil(() => watcher.ended, 10_000, "the stream of the purged run to end");
    assert.equal(watcher.response.complete, true, "ended cleanly, not cut off");
    assert.deepEqual(
      watcher.messages
        .filter((m) => m.event === "agent_ended")
        .map((m) => [m.data.agentId, m.data.outcome])
        .sort(),
      [
        [gone.child, "aborted"],
        [gone.root, "aborted"],
      ].sort(),
    );

    const assertGone = async (daemon: Daemon) => {
      assert.equal((await daemon.call("GET", `/runs/${gone.runId}`)).status, 404);
      const again = await daemon.call("DELETE", `/runs/${gone.runId}?purge=true`);
      assert.deepEqual([again.status, again.body], [404, { error: `run ${gone.runId} does not exist` }]);
      assert.equal((await daemon.call("DELETE", `/runs/${gone.runId}`)).status, 404);
      assert.equal(
        (
          await daemon.call("POST", `/runs/${gone.runId}/agents`, {
            parentAgentId: gone.root,
            spec: { name: "late", script: [] },
          })
        ).status,
        404,
      );
      for (const agentId of [gone.root, gone.child]) {
        const agent = await daemon.call("GET", `/agents/${agentId}`);
        assert.deepEqual([agent.status, agent.body], [404, { error: `agent ${agentId} does not exist` }]);
        assert.equal((await daemon.call("GET", `/agents/${agentId}/result`)).status, 404);
        assert.equal((await daemon.call("POST", `/agents/${agentId}/stop`)).status, 404);
        assert.equal(existsSync(join(dataDir, "results", agentId)), false, `results of ${agentId} removed`);
      }
      const stream = await openEvents(daemon.url, gone.runId);
      assert.equal(stream.status, 404);
      stream.close();
      for (const id of gone.sandboxIds)
        assert.equal(existsSync(join(dataDir, "sandboxes", id)), false, `sandbox folder ${id} removed`);
    };
    await assertGone(d);

    // The other run: its agents, results, sandboxes and stream go on as before.
    const keptView = (await d.call("GET", `/runs/${kept.runId}`)).body;
    assert.deepEqual(
      keptView.agents.map((a: { state: string }) => a.state),
      ["running", "running"],
    );
    assert.equal((await d.call("GET", `/agents/${kept.root}/result`)).body.result, "said kept\n");
    for (const id of kept.sandboxIds) assert.ok(existsSync(join(dataDir, "sandboxes", id)));
    for (const id of [kept.root, kept.child]) assert.ok(existsSync(join(dataDir, "results", id)));
    assert.equal((await d.call("POST", `/agents/${kept.child}/prompt`, { text: "still here" })).status, 202);
    await keptEvents.waitFor(
      (m) => m.event === "handle_settled" && m.data.agentId === kept.child && (m.id ?? 0) > keptView.asOf,
      60_000,
    );
    assert.equal(keptEvents.ended, false, "the other run's stream stays open");
    keptEvents.close();
    const keptSeqs = keptEvents.messages.flatMap((m) => (m.id === undefined ? [] : [m.id]));
    assert.deepEqual(
      keptSeqs,
      keptSeqs.map((_, i) => i + 1),
      "the other run's events are whole, from seq 1",
    );

    // Below the ledger's API: no LevelDB key names the run or its agents; the other run's are there.
    await d.stop();
    d = undefined;
    const keys = await rawLedgerKeys(join(dataDir, "ledger"));
    assert.deepEqual(keysNaming(keys, gone.ids), []);
    for (const key of [`!meta!run!${kept.runId}`, `!ix!agent!${kept.root}`, `!ix!idem!${kept.runId}!k1`])
      assert.ok(keys.includes(key), `${key} kept`);
    assert.ok(keys.filter((key) => key.startsWith(`!ev!${kept.runId}!`)).length >= keptSeqs.length);

    d = await onProcess(dataDir);
    assert.equal(await d.service.restore(), 1, "only the other run is restored");
    await assertGone(d);
    assert.equal((await d.call("GET", `/runs/${kept.runId}`)).body.agents.length, 2);
  });
});
