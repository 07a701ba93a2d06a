/**
 * The data folder's disk fills up under a running daemon (issue 23, item 6): a tmpfs of the test's
 * own is the data folder, filled from the host side by a file beside the ledger, not by an agent.
 * While it is full every route that records something answers 507 `STORAGE_FULL` naming the data
 * folder and leaves nothing behind, `/health` answers 503 and `swarmd_storage_full` is 1, reads go
 * on and the runs in flight live on. Once the file is removed the daemon takes writes again on its
 * own, and the runs go on with their seqs gap-free, after a restart too. Real HTTP on loopback, a
 * real LevelDB, the simulated runtime. Needs root to mount the tmpfs; skipped with the reason otherwise.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";
import { sampleValue } from "../support/prometheus-text.ts";
import { openEvents } from "../support/sse-client.ts";
import { mountTmpfs } from "../support/tmpfs.ts";

const mounted = mountTmpfs(32);
const skip = "skip" in mounted ? mounted.skip : false;

describe("a data folder whose disk fills up", { skip }, () => {
  let d: Daemon;
  let runId: string;
  let lead: string;
  let kid: string;

  before(async () => {
    if ("skip" in mounted) return;
    d = await startDaemon({ dataDir: mounted.dir });
    const created = await d.call("POST", "/runs", { spec: { name: "lead", script: [] }, keepAlive: true });
    ({ runId, rootAgentId: lead } = created.body);
    await waitForState(d, lead, "running");
    kid = (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: lead,
        spec: { name: "kid", script: [] },
        keepAlive: true,
        prompt: "first",
      })
    ).body.agentId;
    assert.equal((await d.call("GET", `/agents/${kid}/result?wait=60`)).body.result, "first");
  });
  after(async () => {
    if ("skip" in mounted) return;
    await d?.stop();
    mounted.unmount();
  });

  const health = () => d.call("GET", "/health");
  const storageFull = async () => {
    const text = await (await fetch(`${d.url}/metrics`)).text();
    return sampleValue(text, "swarmd_storage_full");
  };
  const runIds = async () => (await d.call("GET", "/runs")).body.runs.map((r: Json) => r.runId).sort();

  it("answers 507 STORAGE_FULL while the disk is full, leaves nothing behind, and recovers gap-free", async (t) => {
    if ("skip" in mounted) return;
    t.after(() => mounted.free());
    assert.deepEqual((await health()).body, { ok: true });
    assert.equal(await storageFull(), 0);
    // An agent stopped while the disk is full, and one in the middle of a turn when it fills.
    const doomed = (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: lead,
        spec: { name: "doomed", script: [] },
        keepAlive: true,
      })
    ).body.agentId;
    await waitForState(d, doomed, "running");
    const doomedSandbox = (await d.call("GET", `/agents/${doomed}`)).body.sandboxId;
    const busy = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: lead,
      spec: { name: "busy", script: [{ text: "busy done", delayMs: 1_500 }, { text: "busy again" }] },
      keepAlive: true,
      prompt: "go",
    });
    const live = await openEvents(d.url, runId, { lastEventId: d.ledger.lastSeq(runId) });
    const ofBusy = (event: string) => (m: { event: string; data: Json }) =>
      m.event === event && m.data.agentId === busy.body.agentId;
    // Its turn recorded as begun and its answer streaming: the disk fills in the middle of its model call.
    await live.waitFor(ofBusy("turn_start"), 60_000);
    await live.waitFor(ofBusy("text"), 60_000);
    mounted.fill();

    // The first write that finds no room is refused; writes that still fitted in the log's last page
    // made runs of their own, each whole.
    let refused: Json;
    for (let i = 0; i < 50 && refused === undefined; i++) {
      const listed = await runIds();
      const answer = await d.call("POST", "/runs", { spec: { name: `try-${i}`, script: [] } });
      if (answer.status === 202) continue;
      refused = answer;
      assert.deepEqual(await runIds(), listed, "the refused run is not listed");
    }
    assert.ok(refused, "a write was refused on the full disk");
    assert.equal(refused.status, 507, JSON.stringify(refused.body));
    assert.deepEqual(Object.keys(refused.body), ["error"]);
    assert.match(
      refused.body.error,
      new RegExp(`^the data folder ${mounted.dir} is full \\(no space left on device\\)`),
    );

    const down = await health();
    assert.equal(down.status, 503);
    assert.deepEqual(down.body, { ok: false, error: "STORAGE_FULL" });
    assert.equal(await storageFull(), 1);

    // Every route that records something is refused at once, and changes nothing.
    const before = {
      runs: (await d.call("GET", "/runs")).body,
      run: (await d.call("GET", `/runs/${runId}`)).body,
      kid: (await d.call("GET", `/agents/${kid}`)).body,
    };
    const writes: Array<[string, string, Json?]> = [
      ["POST", "/runs", { spec: { name: "late", script: [] } }],
      ["POST", `/runs/${runId}/agents`, { parentAgentId: lead, spec: { name: "late", script: [] } }],
      ["POST", `/agents/${kid}/prompt`, { text: "again" }],
      ["POST", `/agents/${kid}/steer`, { message: "turn" }],
      ["POST", `/agents/${kid}/budget`, { maxTokens: 1000 }],
      ["POST", `/agents/${kid}/stop`, { mode: "drain" }],
      ["DELETE", `/runs/${runId}?purge=true`],
    ];
    for (const [method, path, body] of writes) {
      const answer = await d.call(method, path, body);
      assert.equal(answer.status, 507, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      assert.match(answer.body.error, /is full/);
    }
    // Reads go on: the run, its agents, its whole stream.
    assert.deepEqual(
      {
        runs: (await d.call("GET", "/runs")).body,
        run: (await d.call("GET", `/runs/${runId}`)).body,
        kid: (await d.call("GET", `/agents/${kid}`)).body,
      },
      before,
    );
    const replay = await openEvents(d.url, runId);
    await replay.waitUntil(() => replay.messages.filter((m) => m.id !== undefined).length === before.run.asOf);
    replay.close();
    assert.equal((await d.call("GET", `/agents/${kid}/machine`)).body.running, true, "the agents live on");
    // A stop still acts: the agent ends and its sandbox is closed, though its end cannot be recorded.
    const stopped = await d.call("POST", `/agents/${doomed}/stop`, {});
    assert.equal(stopped.status, 202, JSON.stringify(stopped.body));
    assert.deepEqual(stopped.body.results, [{ agentId: doomed, outcome: "applied" }]);
    const sandboxes = await d.runtime.list(AbortSignal.timeout(30_000));
    assert.ok(!sandboxes.some((s) => s.sandboxId === doomedSandbox), "the stopped agent's sandbox is closed");
    // The busy agent's answer streams to its end while the disk is full (its text is not stored).
    await live.waitUntil(
      () =>
        live.messages
          .filter(ofBusy("text"))
          .map((m) => m.data.delta)
          .join("") === "busy done",
      30_000,
      "the busy agent's answer streamed",
    );
    // Its usage cannot be recorded: the call is held (held time, its quiet clock stopped), so the turn waits instead of failing.
    assert.deepEqual(
      await pollUntil(
        async () => (await d.call("GET", `/agents/${busy.body.agentId}/machine`)).body.value,
        (value) => JSON.stringify(value) !== JSON.stringify({ live: { running: { turn: "clock" } } }),
        "the busy agent held",
      ),
      { live: { running: { turn: "held" } } },
    );
    assert.ok(!(await health()).body.ok, "still full");

    mounted.free();
    const up = await pollUntil(health, (r) => r.status === 200, "health after the space came back", 30_000);
    assert.deepEqual(up.body, { ok: true });
    assert.equal(await storageFull(), 0);

    // The held turn ends as it would have, and the agent takes its next one.
    const held = (await d.call("GET", `/agents/${busy.body.agentId}/result?wait=60`)).body;
    assert.equal(held.state, "settled", JSON.stringify(held));
    assert.equal(held.outcome, "success");
    assert.equal(held.result, "busy done");
    live.close();
    // The run goes on where it was, its seqs gap-free; a new run is taken.
    assert.equal((await d.call("POST", `/agents/${busy.body.agentId}/prompt`, { text: "more" })).status, 202);
    await pollUntil(
      async () => (await d.call("GET", `/agents/${busy.body.agentId}/result`)).body.result,
      (result) => result === "busy again",
      "the busy agent's next turn",
    );
    assert.equal((await d.call("POST", `/agents/${kid}/prompt`, { text: "second" })).status, 202);
    await pollUntil(
      async () => (await d.call("GET", `/agents/${kid}/result`)).body.result,
      (result) => result === "second",
      "the second turn's result",
    );
    const fresh = await d.call("POST", "/runs", { spec: { name: "after", script: [] }, prompt: "hello" });
    assert.equal(fresh.status, 202, JSON.stringify(fresh.body));
    assert.equal((await d.call("GET", `/agents/${fresh.body.rootAgentId}/result?wait=60`)).body.result, "hello");
    const ids = await streamedIds(runId, d.ledger.lastSeq(runId));
    assert.deepEqual(
      ids,
      ids.map((_, i) => i + 1),
      "seqs 1..n, no gap",
    );
    assert.deepEqual(
      await runIds(),
      [...before.runs.runs.map((r: Json) => r.runId), fresh.body.runId].sort(),
      "the runs before the disk filled and the one made after it, nothing else",
    );

    // Everything recorded after the recovery is still there after a restart, in the same seqs.
    const recorded = async () => {
      const runs: Record<string, string[]> = {};
      for (const id of d.ledger.runIds().sort())
        runs[id] = (await d.ledger.read(id, 0, 100_000)).map((e) => `${e.seq} ${e.type} ${e.agentId}`);
      return runs;
    };
    const kept = await recorded();
    await d.stop();
    d = await startDaemon({ dataDir: mounted.dir });
    await d.service.restore();
    // The restart adds events of its own (the simulated sandboxes ended with the old daemon): only what was there is compared.
    const now = await recorded();
    for (const [id, events] of Object.entries(kept)) assert.deepEqual(now[id]?.slice(0, events.length), events, id);
  });

  it("takes back a spawn and a cap the disk refused: the spawn's place in the tree, its count against the budget, the caps", async (t) => {
    if ("skip" in mounted) return;
    t.after(() => mounted.free());
    await pollUntil(health, (r) => r.status === 200, "a healthy daemon");
    const created = await d.call("POST", "/runs", {
      spec: { name: "budgeted", script: [], maxAgents: 8 },
      keepAlive: true,
    });
    const root = created.body.rootAgentId;
    await waitForState(d, root, "running");
    // Children that wait for their (idle) parent's result stay spawning and write nothing of their
    // own: the spawn itself is the write that finds the disk full.
    const spawn = () =>
      d.call("POST", `/runs/${created.body.runId}/agents`, {
        parentAgentId: root,
        spec: { name: "kid", script: [] },
        waitFor: [root],
      });
    mounted.fill();
    // Spawns that still fit in the log's last page are recorded; the first that does not is refused.
    let recorded = 0;
    for (;;) {
      const answer = await spawn();
      if (answer.status !== 202) {
        assert.equal(answer.status, 507, JSON.stringify(answer.body));
        break;
      }
      recorded += 1;
      assert.ok(recorded < 8, "a spawn was refused on the full disk");
    }
    mounted.free();
    await pollUntil(health, (r) => r.status === 200, "health after the space came back", 30_000);

    // The budget has room for exactly the spawns that were not recorded, at the next places in the tree.
    const accepted: string[] = [];
    for (let i = recorded; i < 8; i++) {
      const answer = await spawn();
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      accepted.push(answer.body.agentId);
    }
    const over = await spawn();
    assert.equal(over.status, 202);
    assert.equal((await d.call("GET", `/agents/${over.body.agentId}`)).body.outcome, "budget-exceeded");
    const { agents } = (await d.call("GET", `/runs/${created.body.runId}`)).body;
    const children = agents.filter((a: Json) => a.parentAgentId === root);
    assert.deepEqual(
      children.map((a: Json) => a.spawnIndex),
      children.map((_: Json, i: number) => i),
      "spawnIndex 0..n, none skipped",
    );
    for (const agentId of accepted)
      assert.notEqual((await d.call("GET", `/agents/${agentId}`)).body.outcome, "budget-exceeded");

    // A new cap whose write finds the disk full is not taken either (caps that still fitted are).
    const budgetOf = async () => (await d.call("GET", `/agents/${root}`)).body.budget;
    mounted.fill();
    let caps = await budgetOf();
    for (let maxTokens = 1_000; ; maxTokens += 1) {
      const capped = await d.call("POST", `/agents/${root}/budget`, { maxTokens });
      if (capped.status === 200) {
        caps = capped.body.budget;
        assert.ok(maxTokens < 1_100, "a cap was refused on the full disk");
        continue;
      }
      assert.equal(capped.status, 507, JSON.stringify(capped.body));
      break;
    }
    assert.deepEqual(await budgetOf(), caps);
    mounted.free();
    await pollUntil(health, (r) => r.status === 200, "health after the space came back", 30_000);
    assert.deepEqual(await budgetOf(), caps);
  });

  /** The ids of a run's persisted events as its stream replays them, once it has `count`. */
  async function streamedIds(id: string, count: number): Promise<number[]> {
    const stream = await openEvents(d.url, id);
    await stream.waitUntil(() => stream.messages.filter((m) => m.id !== undefined).length >= count);
    stream.close();
    return stream.messages.flatMap((m) => (m.id === undefined ? [] : [m.id]));
  }
});
