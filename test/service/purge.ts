import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import {
  echoSpec,
  type MemoryService,
  type MemoryServiceOptions,
  rejectsWithCode,
  startMemoryService,
} from "../support/memory-service.ts";
import { keysNaming, rawLedgerKeys } from "../support/raw-ledger.ts";

/** A promise and the function that settles it. */
function gate() {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** A run with something under every key family: a script cursor, a result per agent, an idempotent spawn. */
async function fullRun(s: MemoryService, name: string) {
  const script = [
    { tool: "bash", args: { command: `echo ${name} > f.txt; cat f.txt` } },
    { text: "said {{lastToolResult}}" },
  ];
  const { runId, rootAgentId: root } = await s.service.createRun({
    spec: { name, script },
    prompt: "go",
    keepAlive: true,
  });
  const child = (
    await s.service.spawn(runId, {
      parentAgentId: root,
      spec: echoSpec(`${name}-kid`),
      prompt: `hi ${name}`,
      keepAlive: true,
      idempotencyKey: "k1",
    })
  ).agentId;
  assert.equal((await s.service.result(root, 5)).result, `said ${name}\n`);
  assert.equal((await s.service.result(child, 5)).result, `hi ${name}`);
  await s.agentWhen(child, (a) => a.state === "running", "runs");
  return { runId, root, child, ids: [runId, root, child] };
}

const resultDir = (s: MemoryService, agentId: string) => join(s.dataDir, "results", agentId);
const sandboxesOf = async (s: MemoryService, runId: string) =>
  (await s.runtime.list(AbortSignal.timeout(1000))).filter((i) => i.runId === runId);
const indexKeys = async (s: MemoryService) => (await s.ledger.listIndex("")).map((e) => e.key);

/** Every route of the service answers for the run and its agents as if they never existed. */
async function assertGone(
  s: MemoryService,
  run: { runId: string; root: string; child: string; ids: string[] },
): Promise<void> {
  assert.equal(s.service.hasRun(run.runId), false);
  assert.throws(
    () => s.service.getRun(run.runId),
    (err) => isSwarmError(err, "RUN_NOT_FOUND"),
  );
  await rejectsWithCode(() => s.service.deleteRun(run.runId), "RUN_NOT_FOUND");
  await rejectsWithCode(() => s.service.deleteRun(run.runId, { purge: true }), "RUN_NOT_FOUND");
  await rejectsWithCode(
    () => s.service.spawn(run.runId, { parentAgentId: run.root, spec: echoSpec("late") }),
    "RUN_NOT_FOUND",
  );
  for (const agentId of [run.root, run.child]) {
    await rejectsWithCode(() => s.service.getAgent(agentId), "AGENT_NOT_FOUND");
    await rejectsWithCode(() => s.service.result(agentId, 0), "AGENT_NOT_FOUND");
    await rejectsWithCode(() => s.service.prompt(agentId, "more"), "AGENT_NOT_FOUND");
    await rejectsWithCode(() => s.service.stop(agentId, { mode: "abort", scope: "agent" }), "AGENT_NOT_FOUND");
    assert.equal(existsSync(resultDir(s, agentId)), false, `results of ${agentId} removed`);
  }
  assert.equal(s.ledger.runIds().includes(run.runId), false);
  assert.deepEqual(keysNaming(await indexKeys(s), run.ids), [], "no index key of the run or its agents is left");
  assert.deepEqual(await sandboxesOf(s, run.runId), []);
}

describe("service: purging a run (DELETE ?purge=true)", () => {
  const services: MemoryService[] = [];
  const start = async (options?: MemoryServiceOptions) => {
    const s = await startMemoryService(options);
    services.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of services.splice(0)) await s.stop();
  });

  it("ends the run as a delete does, then removes its ledger, results and sandboxes, and nothing of another run", async () => {
    const s = await start();
    const gone = await fullRun(s, "gone");
    const kept = await fullRun(s, "kept");
    const keys = await indexKeys(s);
    for (const key of [
      `agent!${gone.root}`,
      `script!${gone.root}`,
      `hseq!${gone.child}`,
      `prompts!${gone.child}`,
      `idem!${gone.runId}!k1`,
    ])
      assert.ok(keys.includes(key), `${key} is there to remove`);
    const keptEvents = await s.events(kept.runId);
    const keptKeys = keysNaming(keys, kept.ids);
    let ended = 0;
    const seen = s.eventWhen(
      gone.runId,
      (e) => e.type === "agent_ended" && e.data.outcome === "aborted" && ++ended === 2,
      "both agents aborted",
    );

    assert.equal(await s.service.deleteRun(gone.runId, { purge: true }), undefined, "answers as a plain delete does");
    await seen; // the end was recorded as for a delete before the run was removed
    await assertGone(s, gone);

    assert.deepEqual(await s.events(kept.runId), keptEvents, "the other run's events are untouched");
    assert.deepEqual(keysNaming(await indexKeys(s), kept.ids), keptKeys, "and its index keys");
    assert.equal(s.service.getRun(kept.runId).agents.length, 2);
    assert.equal((await s.service.result(kept.child, 0)).result, "hi kept", "and its results");
    assert.equal((await sandboxesOf(s, kept.runId)).length, 2, "and its sandboxes");
    await s.service.prompt(kept.child, "still here");
    let turns = 0;
    await s.eventWhen(
      kept.runId,
      (e) => e.type === "handle_settled" && e.agentId === kept.child && ++turns === 2,
      "the second turn",
    );

    let raw: string[] = [];
    assert.equal(
      await s.restart(async () => {
        raw = await rawLedgerKeys(join(s.dataDir, "ledger"));
      }),
      1,
      "only the other run is restored",
    );
    assert.deepEqual(keysNaming(raw, gone.ids), [], "no key of the run is left in LevelDB, events included");
    assert.ok(keysNaming(raw, [kept.runId]).some((key) => key.startsWith(`!ev!${kept.runId}!`)));
    await assertGone(s, gone);
    assert.equal(s.service.getRun(kept.runId).agents.length, 2);
  });

  it("purges a run whose agents had already ended, and a second purge is a 404", async () => {
    const s = await start();
    const { runId, rootAgentId } = await s.service.createRun({ spec: echoSpec("once"), prompt: "bye" });
    await s.agentWhen(rootAgentId, (a) => a.state === "done", "ends after its turn");
    await s.service.deleteRun(runId);
    const [first, second] = await Promise.allSettled([
      s.service.deleteRun(runId, { purge: true }),
      s.service.deleteRun(runId, { purge: true }),
    ]);
    assert.equal(first.status, "fulfilled");
    assert.equal(second.status, "fulfilled", "a purge already under way is the same purge");
    await rejectsWithCode(() => s.service.deleteRun(runId, { purge: true }), "RUN_NOT_FOUND");
    assert.equal(existsSync(resultDir(s, rootAgentId)), false);
  });

  it("a purge cut short by a crash shows no half run after the restart, which finishes it", async () => {
    // Sandbox closes hang once the run has left the ledger: the daemon "dies" in the middle of the sweep.
    let target = "";
    const release = gate();
    const stuck = gate();
    let s!: MemoryService;
    const hangAfterDrop = (rt: SandboxRuntime): SandboxRuntime => ({
      ...rt,
      close: async (sandboxId, signal) => {
        if (target !== "" && !s.ledger.runIds().includes(target)) {
          stuck.resolve();
          await release.promise;
        }
        return rt.close(sandboxId, signal);
      },
    });
    s = await start({ wrap: hangAfterDrop });
    const gone = await fullRun(s, "gone");
    const kept = await fullRun(s, "kept");
    target = gone.runId;
    const purging = s.service.deleteRun(gone.runId, { purge: true });
    await stuck.promise;
    assert.equal(s.service.hasRun(gone.runId), false, "gone from the API as soon as it left the ledger");

    let raw: string[] = [];
    target = "";
    await s.restart(async () => {
      raw = await rawLedgerKeys(join(s.dataDir, "ledger"));
    });
    assert.ok(!raw.includes(`!meta!run!${gone.runId}`), "the crash left the run off the list of runs");
    assert.ok(raw.includes(`!ix!purge!${gone.runId}`), "and its marker");
    assert.ok(
      raw.some((key) => key.startsWith(`!ev!${gone.runId}!`)),
      "with its events still to erase",
    );

    await assertGone(s, gone);
    assert.deepEqual(await s.ledger.listIndex("purge!"), [], "the restart finished the purge");
    assert.equal(s.service.getRun(kept.runId).agents.length, 2);
    await s.restart(async () => {
      raw = await rawLedgerKeys(join(s.dataDir, "ledger"));
    });
    assert.deepEqual(keysNaming(raw, gone.ids), []);

    // The old service's sweep, let go, finds its ledger closed: its request fails, nothing is written.
    release.resolve();
    await assert.rejects(purging, (err) => isSwarmError(err, "LEDGER_CLOSED"));
  });
});
