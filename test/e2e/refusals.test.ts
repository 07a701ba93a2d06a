/**
 * A refused request leaves nothing behind (issue 23, item 1). A run with agents in every state a
 * refusal can meet (running, ended, draining with an approval pending, under a spend cap) is
 * photographed over HTTP, together with the ledger's runs and index keys, the runtime's sandboxes
 * and the results folder; then every route is sent each request it refuses after its body
 * validated, and the photograph must come out the same, with no event on the run's stream.
 * Runs on the simulated runtime (or `SWARM_E2E_RUNTIME`).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Level } from "level";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { startBridge } from "../bridge/bridge-client.ts";
import { inbox } from "../support/approval-runs.ts";
import { type Daemon, e2eRuntime, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { spawnDaemon } from "../support/daemon-process.ts";
import { openEvents } from "../support/sse-client.ts";

const UNKNOWN_MODEL = { provider: "anthropic", id: "claude-nonexistent" };
/** A model pi-ai knows on an API the gateway does not carry. */
const UNCARRIED_MODEL = { provider: "google", id: "gemini-2.5-flash" };

describe(`a refused request leaves nothing behind (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  /** The run every refusal aims at, and its agents. */
  let runId: string;
  let lead: string;
  let kid: string;
  let gone: string;
  let gated: string;
  let resolvedRequest: string;

  before(async () => {
    d = await startDaemon();
    const created = await d.call("POST", "/runs", {
      spec: { name: "lead", script: [], maxTokens: 1_000_000 },
      keepAlive: true,
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    ({ runId, rootAgentId: lead } = created.body);
    await waitForState(d, lead, "running");
    const spawn = async (spec: Json, extra: Json = {}) => {
      const spawned = await d.call("POST", `/runs/${runId}/agents`, { parentAgentId: lead, spec, ...extra });
      assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
      return spawned.body.agentId as string;
    };
    kid = await spawn({ name: "kid", script: [] }, { keepAlive: true });
    gone = await spawn({ name: "gone", script: [] }, { prompt: "bye" });
    // Two gated calls: the first is allowed here (a resolved request), the second stays pending.
    gated = await spawn(
      {
        name: "gated",
        approve: [{ tool: "bash" }],
        script: [
          { tool: "bash", args: { command: "echo one" } },
          { tool: "bash", args: { command: "echo two" } },
          { text: "done" },
        ],
      },
      { prompt: "go", keepAlive: true },
    );
    await waitForState(d, kid, "running");
    await waitForState(d, gone, "done");
    const [first] = await inbox(d.call, runId, 1);
    resolvedRequest = first.requestId;
    assert.equal(
      (await d.call("POST", `/agents/${gated}/permissions/${resolvedRequest}`, { decision: "allow" })).status,
      202,
    );
    await inbox(d.call, runId, 1); // the second call's request
    // Drained in the middle of its turn, which waits for the second approval: it stays draining.
    const drained = await d.call("POST", `/agents/${gated}/stop`, { mode: "drain" });
    assert.equal(drained.status, 202, JSON.stringify(drained.body));
    assert.equal((await d.call("GET", `/agents/${gated}`)).body.draining, true);
  });
  after(() => d.stop());

  /** Everything a request could leave behind, as a client and the data folder see it. */
  const world = async () => {
    const runs = (await d.call("GET", "/runs")).body;
    const snapshots: Json[] = [];
    const agents: Json[] = [];
    const permissions: Json[] = [];
    for (const { runId: id } of runs.runs) {
      const snapshot = (await d.call("GET", `/runs/${id}`)).body;
      snapshots.push(snapshot);
      permissions.push((await d.call("GET", `/runs/${id}/permissions?state=all`)).body);
      for (const agent of snapshot.agents) agents.push((await d.call("GET", `/agents/${agent.agentId}`)).body);
    }
    const results = join(d.dataDir, "results");
    return {
      runs,
      snapshots,
      agents,
      permissions,
      ledgerRuns: d.ledger.runIds().sort(),
      seqs: d.ledger.runIds().map((id) => [id, d.ledger.lastSeq(id)]),
      index: await d.ledger.listIndex(""),
      sandboxes: (await d.runtime.list(AbortSignal.timeout(30_000))).map((s) => s.sandboxId).sort(),
      results: existsSync(results) ? readdirSync(results).sort() : [],
    };
  };

  /** Each request this route refuses after its body validated: [what, method, path, body, status, message]. */
  const refusals = (): Array<[string, string, string, Json, number, RegExp]> => [
    [
      "a run of an unknown model",
      "POST",
      "/runs",
      { spec: { name: "x", model: UNKNOWN_MODEL } },
      400,
      /body\.spec\.model: unknown model/,
    ],
    [
      "a run of a model the gateway cannot carry",
      "POST",
      "/runs",
      { spec: { name: "x", model: UNCARRIED_MODEL } },
      400,
      /body\.spec\.model: google\/gemini-2\.5-flash speaks/,
    ],
    [
      "a run above the daemon's limits",
      "POST",
      "/runs",
      { spec: { name: "x", script: [], limits: { memoryMiB: 1_000_000 } } },
      400,
      /body\.spec\.limits\.memoryMiB/,
    ],
    [
      "a spawn under an unknown parent",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: "a_00000000deadbeef", spec: { name: "x", script: [] } },
      404,
      /parentAgentId a_00000000deadbeef/,
    ],
    [
      "a spawn waiting for an agent outside the run",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: lead, spec: { name: "x", script: [] }, waitFor: ["a_00000000deadbeef"] },
      400,
      /body\.waitFor: a_00000000deadbeef is not an agent/,
    ],
    [
      "a spawn of an unknown model",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: lead, spec: { name: "x", model: UNKNOWN_MODEL } },
      400,
      /body\.spec\.model: unknown model/,
    ],
    [
      "a spawn asking more than its parent has",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: lead, spec: { name: "x", script: [], limits: { memoryMiB: 1_000_000 } } },
      400,
      /body\.spec\.limits\.memoryMiB/,
    ],
    [
      "a spawn under an ended parent",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: gone, spec: { name: "x", script: [] } },
      409,
      /not live/,
    ],
    [
      "a spawn under a draining parent",
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: gated, spec: { name: "x", script: [] } },
      409,
      /draining/,
    ],
    [
      "a spawn in an unknown run",
      "POST",
      "/runs/r_00000000deadbeef/agents",
      { parentAgentId: lead, spec: { name: "x", script: [] } },
      404,
      /run r_00000000deadbeef/,
    ],
    ["a prompt to an ended agent", "POST", `/agents/${gone}/prompt`, { text: "more" }, 409, /not live/],
    ["a prompt to a draining agent", "POST", `/agents/${gated}/prompt`, { text: "more" }, 409, /draining/],
    ["a steer of an ended agent", "POST", `/agents/${gone}/steer`, { message: "turn" }, 409, /not live/],
    ["a steer of a draining agent", "POST", `/agents/${gated}/steer`, { message: "turn" }, 409, /draining/],
    ["a pause of an ended agent", "POST", `/agents/${gone}/pause`, {}, 409, /not live/],
    ["a resume of a running agent", "POST", `/agents/${kid}/resume`, {}, 409, /not paused/],
    ["a resume of an ended agent", "POST", `/agents/${gone}/resume`, {}, 409, /not live/],
    [
      "a cap above what the parent has left",
      "POST",
      `/agents/${kid}/budget`,
      { maxTokens: 5_000_000 },
      409,
      /more tokens than its parent has left/,
    ],
    [
      "a cap of an unknown agent",
      "POST",
      "/agents/a_00000000deadbeef/budget",
      { maxTokens: 5 },
      404,
      /a_00000000deadbeef/,
    ],
    [
      "an answer to an unknown request",
      "POST",
      `/agents/${gated}/permissions/p_00000000deadbeef`,
      { decision: "allow" },
      404,
      /no approval request p_00000000deadbeef/,
    ],
    [
      "an answer to a request of another agent",
      "POST",
      `/agents/${kid}/permissions/${resolvedRequest}`,
      { decision: "deny" },
      404,
      /no approval request/,
    ],
    [
      "a second answer",
      "POST",
      `/agents/${gated}/permissions/${resolvedRequest}`,
      { decision: "deny" },
      409,
      /already resolved/,
    ],
    ["a delete of an unknown run", "DELETE", "/runs/r_00000000deadbeef", undefined, 404, /r_00000000deadbeef/],
    [
      "a purge of an unknown run",
      "DELETE",
      "/runs/r_00000000deadbeef?purge=true",
      undefined,
      404,
      /r_00000000deadbeef/,
    ],
  ];

  it("refusals of every route change nothing a client or the data folder can see, and write no event", async () => {
    const before = await world();
    const lastSeq = d.ledger.lastSeq(runId);
    const stream = await openEvents(d.url, runId, { lastEventId: lastSeq });
    for (const [what, method, path, body, status, message] of refusals()) {
      const answer = await d.call(method, path, body);
      assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`);
      assert.match(answer.body.error, message, what);
    }
    assert.deepEqual(await world(), before);

    // The next event the stream delivers is the next write's, at the next seq: nothing came between.
    assert.equal((await d.call("POST", `/agents/${lead}/budget`, { maxTokens: 2_000_000 })).status, 200);
    const next = await stream.waitFor((m) => m.id !== undefined);
    stream.close();
    assert.equal(next.event, "budget_changed");
    assert.equal(next.id, lastSeq + 1);
  });

  it("a refused run is not listed, and the bridge's swarm_create_run leaves none either", async () => {
    const listed = async () => (await d.call("GET", "/runs")).body.runs.map((r: Json) => r.runId);
    const runs = await listed();
    const refused = await d.call("POST", "/runs", { spec: { name: "ghost", model: UNKNOWN_MODEL } });
    assert.equal(refused.status, 400);
    const bridge = await startBridge({ SWARM_URL: d.url });
    try {
      const answer = await bridge.tool("swarm_create_run", { spec: { name: "ghost", model: UNKNOWN_MODEL } });
      assert.equal(answer.isError, true, answer.text);
      assert.match(answer.text, /unknown model/);
      const list = await bridge.tool("swarm_list_runs", {});
      assert.deepEqual(
        list.data.runs.map((r: Json) => r.runId),
        runs,
      );
    } finally {
      await bridge.close();
    }
    assert.deepEqual(await listed(), runs);
    assert.ok(
      (await d.call("GET", "/runs")).body.runs.every((r: Json) => r.createdAt > 0 && r.specName !== "ghost"),
      "no run created at the epoch",
    );
  });
});

describe("what an old data folder holds of a run that never got a root", () => {
  it("is not listed nor shown as a run created at the epoch, and says so in the log", async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-remnant-"));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { SWARM_RUNTIME: "simulated" };
    let daemon = await spawnDaemon(dataDir, env);
    const real = (await daemon.call("POST", "/runs", { spec: { name: "real", script: [] }, prompt: "hi" })).body;
    assert.equal((await daemon.call("GET", `/agents/${real.rootAgentId}/result?wait=60`)).body.result, "hi");
    await daemon.kill("SIGTERM");

    // A run with events but no root (only its run_started), and one the list of runs names without any event.
    const withoutRoot = "r_00000000000000a1";
    const withoutEvents = "r_00000000000000b2";
    const ledger = await openLedger(join(dataDir, "ledger"));
    await ledger.append(withoutRoot, [{ type: "run_started", agentId: null, data: { runId: withoutRoot } }]);
    await ledger.close();
    const db = new Level<string, string>(join(dataDir, "ledger"));
    await db.sublevel("meta").put(`run!${withoutEvents}`, "0");
    await db.close();

    daemon = await spawnDaemon(dataDir, env);
    try {
      const { runs } = (await daemon.call("GET", "/runs")).body;
      assert.deepEqual(
        runs.map((r: Json) => r.runId),
        [real.runId],
      );
      assert.ok(runs[0].createdAt > 0);
      for (const runId of [withoutRoot, withoutEvents]) {
        assert.equal((await daemon.call("GET", `/runs/${runId}`)).status, 404, runId);
        assert.equal((await daemon.call("DELETE", `/runs/${runId}`)).status, 404, runId);
      }
      assert.match(daemon.output(), new RegExp(`run ${withoutRoot}: its ledger records no root agent`));
    } finally {
      await daemon.kill("SIGTERM");
    }
  });
});
