/**
 * An agent's host calls past the 8 answered at once wait in a queue of 64 (spec §7, §8), and every
 * tool call swarmd itself refuses or cannot carry out is a `tool_refused` event counted in the
 * agent view's `toolErrors` (spec §2.2, §6.1): over HTTP, with scripted agents on the simulated
 * runtime (or `SWARM_E2E_RUNTIME`).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { after, before, describe, it } from "node:test";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { inbox, startGatedRun } from "../support/approval-runs.ts";
import { createRuntime, type Daemon, e2eRuntime, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";

const leaf = { name: "leaf", script: [{ text: "leaf done" }] };
/** One scripted step: `n` tool calls of `tool` at once (pi runs a step's calls in parallel). */
const many = (n: number, tool: string, args: (i: number) => Json) => ({
  tools: Array.from({ length: n }, (_, i) => ({ tool, args: args(i) })),
});

const refusalsIn = async (d: Daemon, runId: string, agentId?: string): Promise<Json[]> =>
  (await d.ledger.read(runId, 0)).filter(
    (e) => e.type === "tool_refused" && (agentId === undefined || e.agentId === agentId),
  );
/** The runtime, keeping each harness connection it opens so the test can cut them. */
function cuttable(inner: SandboxRuntime, sockets: Map<string, Duplex>): SandboxRuntime {
  return new Proxy(inner, {
    get(target, key) {
      if (key === "connect")
        return async (sandboxId: string, signal: AbortSignal) => {
          const socket = await target.connect(sandboxId, signal);
          sockets.set(sandboxId, socket);
          return socket;
        };
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
const viewOf = async (d: Daemon, agentId: string): Promise<Json> => (await d.call("GET", `/agents/${agentId}`)).body;

describe(`host calls wait in a queue; what swarmd refuses is a tool error (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  it("a root spawning 10 children in one step, each spawning 19 in one step, makes all 201 agents, none with a tool error", {
    timeout: 600_000,
  }, async () => {
    const mid = {
      name: "mid",
      script: [many(19, "spawn_agent", (i) => ({ spec: leaf, prompt: `leaf ${i}` })), { text: "mid done" }],
    };
    const root = {
      name: "root",
      script: [many(10, "spawn_agent", (i) => ({ spec: mid, prompt: `mid ${i}` })), { text: "root done" }],
    };
    const created = await d.call("POST", "/runs", {
      spec: root,
      prompt: "fan out",
      budget: { spawnDepth: 2, maxAgents: 200 },
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId } = created.body;
    // The root ends only once every child ended, and each child once its own children did.
    await waitForState(d, rootAgentId, "done", 600_000);
    const agents = (await d.call("GET", `/runs/${runId}`)).body.agents as Json[];
    assert.equal(agents.length, 201);
    assert.deepEqual(
      [0, 1, 2].map((depth) => agents.filter((a) => a.depth === depth).length),
      [1, 10, 190],
    );
    const unclean = agents.filter((a) => a.state !== "done" || a.outcome !== "success" || a.toolErrors !== 0);
    assert.deepEqual(unclean, [], "every agent done success without a tool error");
    assert.deepEqual(await refusalsIn(d, runId), []);
  });

  it("a spawn refused by a budget, and one refused as a bad request, are tool_refused on the spawning agent", async () => {
    const spawner = {
      name: "spawner",
      script: [
        many(2, "spawn_agent", (i) => ({ spec: leaf, prompt: `leaf ${i}` })),
        { tool: "spawn_agent", args: { spec: { name: "not a name!", script: [] } } },
        { text: "spawner done" },
      ],
    };
    const created = await d.call("POST", "/runs", { spec: spawner, prompt: "spawn", budget: { maxAgents: 1 } });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId } = created.body;
    await waitForState(d, rootAgentId, "done");
    const agents = (await d.call("GET", `/runs/${runId}`)).body.agents as Json[];
    assert.deepEqual(agents.map((a) => a.outcome).sort(), ["budget-exceeded", "success", "success"]);
    const refused = await refusalsIn(d, runId, rootAgentId);
    assert.deepEqual(
      refused.map((e) => [e.data.tool, e.data.code, e.data.count]),
      [
        ["spawn_agent", "SPAWN_BUDGET_EXCEEDED", 1],
        ["spawn_agent", "INVALID_BODY", 1],
      ],
    );
    const lost = agents.find((a) => a.outcome === "budget-exceeded");
    assert.match(refused[0].data.message, new RegExp(`maxAgents budget of ${rootAgentId}.*${lost.agentId}`));
    assert.match(refused[1].data.message, /params\.spec\.name: must be 1\.\.64 characters/);
    const root = await viewOf(d, rootAgentId);
    assert.deepEqual([root.outcome, root.toolErrors], ["success", 2], "done success, and it says what was lost");
    assert.equal(agents.find((a) => a.agentId === lost.agentId).toolErrors, 0, "counted on the agent that asked");
  });

  it("an approval the operator denies, on a tool the harness gates and on spawn_agent, is a tool_refused", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }, { tool: "spawn_agent" }],
      script: [
        { tool: "bash", args: { command: "echo never" } },
        { tool: "spawn_agent", args: { spec: leaf, prompt: "never" } },
        { text: "gated done" },
      ],
    });
    const [bash] = await inbox(d.call, runId, 1);
    assert.equal(bash.tool, "bash");
    const no = await d.call("POST", `/agents/${agentId}/permissions/${bash.requestId}`, {
      decision: "deny",
      message: "not on this box",
    });
    assert.equal(no.status, 202);
    const [spawn] = await inbox(d.call, runId, 1);
    assert.equal(spawn.tool, "spawn_agent");
    await d.call("POST", `/agents/${agentId}/permissions/${spawn.requestId}`, { decision: "deny" });
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "gated done");
    const refused = await refusalsIn(d, runId, agentId);
    assert.deepEqual(
      refused.map((e) => e.data),
      [
        { tool: "bash", code: "PERMISSION_DENIED", message: "not on this box", count: 1 },
        { tool: "spawn_agent", code: "PERMISSION_DENIED", message: "the operator denied this tool call", count: 1 },
      ],
    );
    assert.equal((await viewOf(d, agentId)).toolErrors, 2);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("an approval nobody answered within approveTimeoutMs is a tool_refused; one still waiting when the agent stops is not", async () => {
    const { runId, agentId } = await startGatedRun(d.call, {
      approve: [{ tool: "spawn_agent" }],
      approveTimeoutMs: 1_000,
      script: [{ tool: "spawn_agent", args: { spec: leaf, prompt: "never" } }, { text: "timed out" }],
    });
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "timed out");
    const refused = await refusalsIn(d, runId, agentId);
    assert.deepEqual(
      refused.map((e) => [e.data.tool, e.data.code]),
      [["spawn_agent", "PERMISSION_DENIED"]],
    );
    assert.match(refused[0]?.data.message, /nobody decided on this tool call in time \(approveTimeoutMs\)/);
    await d.call("POST", `/agents/${agentId}/stop`, {});

    const waiting = await startGatedRun(d.call, {
      approve: [{ tool: "bash" }],
      script: [{ tool: "bash", args: { command: "echo never" } }, { text: "never" }],
    });
    await inbox(d.call, waiting.runId, 1);
    await d.call("POST", `/agents/${waiting.agentId}/stop`, {});
    const [denied] = (await d.ledger.read(waiting.runId, 0)).filter((e) => e.type === "permission_resolved");
    assert.equal(denied?.data.by, "stop");
    assert.deepEqual(await refusalsIn(d, waiting.runId), [], "the agent's end says it all");
    assert.equal((await viewOf(d, waiting.agentId)).toolErrors, 0);
  });
});

describe(`a flood of host calls (${e2eRuntime()} runtime)`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-flood-"));
  let d: Daemon | undefined;
  after(async () => {
    await d?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("past 8 answered and 64 waiting, calls are refused at once, recorded and counted; a dropped connection loses none; the count survives a restart", {
    timeout: 300_000,
  }, async () => {
    const sockets = new Map<string, Duplex>();
    d = await startDaemon({ dataDir, runtime: (dir) => cuttable(createRuntime(e2eRuntime(), dir), sockets) });
    const created = await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true });
    const { runId, rootAgentId } = created.body;
    await waitForState(d, rootAgentId, "running");
    const child = async (spec: Json, extra: Json = {}) => {
      const spawned = await d!.call("POST", `/runs/${runId}/agents`, { parentAgentId: rootAgentId, spec, ...extra });
      assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
      return spawned.body.agentId as string;
    };
    // An agent that never settles: every await_result on it waits until it ends.
    const target = await child({ name: "target", script: [] }, { keepAlive: true });
    await waitForState(d, target, "running");
    const flooder = await child(
      {
        name: "flooder",
        script: [many(80, "await_result", () => ({ agentId: target, waitSeconds: 240 })), { text: "flood over" }],
      },
      { prompt: "flood" },
    );
    // 8 answered (waiting on the target), 64 queued, 8 refused at once.
    const refused = await pollUntil(
      () => refusalsIn(d!, runId, flooder),
      (list) => list.length >= 8,
      "the flooder's refusals",
    );
    for (const e of refused) {
      assert.deepEqual([e.data.tool, e.data.code, e.data.count], ["await_result", "HOST_CALLS_FULL", 1]);
      assert.match(e.data.message, /^too many host calls: 8 are being answered and 64 wait/);
    }
    assert.equal((await viewOf(d, flooder)).toolErrors, 8);
    // The connection drops: the daemon forgets what waited, the harness sends its 72 open calls
    // again on the next one, and they fit the queue as they did.
    const socket = sockets.get((await viewOf(d, flooder)).sandboxId)!;
    socket.destroy();
    await pollUntil(
      async () => sockets.get((await viewOf(d!, flooder)).sandboxId),
      (next) => next !== socket,
      "a new connection",
    );
    // The flood costs only its own agent: another agent's host calls are answered meanwhile.
    const bystander = await child(
      { name: "bystander", script: [{ tool: "spawn_agent", args: { spec: leaf, prompt: "hi" } }, { text: "ok" }] },
      { prompt: "spawn" },
    );
    await waitForState(d, bystander, "done");
    assert.equal((await viewOf(d, bystander)).toolErrors, 0);

    // The target ends: the 8 answered, then the 64 waiting, in turn.
    await d.call("POST", `/agents/${target}/stop`, {});
    await waitForState(d, flooder, "done");
    const events = await d.ledger.read(runId, 0);
    const ends = events.filter((e) => e.type === "tool_end" && e.agentId === flooder);
    assert.equal(ends.length, 80);
    const failed = ends.filter((e) => e.data.isError === true);
    assert.equal(failed.length, 8, "only the calls past the queue failed");
    assert.match(String(failed[0]?.data.output), /too many host calls/);
    assert.equal((await refusalsIn(d, runId, flooder)).length, 8, "no more refusals once the queue drained");
    const view = await viewOf(d, flooder);
    assert.deepEqual([view.state, view.outcome, view.toolErrors], ["done", "success", 8]);

    // The count is the fold of the ledger: a restarted daemon on the same data folder says the same.
    await d.stop();
    d = undefined;
    d = await startDaemon({ dataDir });
    assert.equal(await d.service.restore(), 1, "as swarmd does when it starts");
    assert.equal((await viewOf(d, flooder)).toolErrors, 8);
    const run = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      Object.fromEntries((run.agents as Json[]).map((a) => [a.specName, a.toolErrors])),
      { root: 0, target: 0, flooder: 8, bystander: 0, leaf: 0 },
      "every agent's count, the flooder's alone not 0",
    );
    await d.call("DELETE", `/runs/${runId}`);
  });
});

describe(`a model call the gateway refuses (${e2eRuntime()} runtime)`, () => {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-nokey-"));
  let d: Daemon;
  before(async () => {
    const modelsFile = join(dir, "models.json");
    // A provider whose key command gives nothing: the gateway has no key to send.
    writeFileSync(
      modelsFile,
      JSON.stringify({
        providers: {
          keyless: {
            baseUrl: "http://127.0.0.1:9/v1",
            api: "openai-completions",
            apiKey: "!false",
            models: [{ id: "m1" }],
          },
        },
      }),
    );
    d = await startDaemon({ gateway: new ModelGateway(loadModelCatalog(modelsFile)) });
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is a tool_refused of tool `model` on the calling agent, and its turn fails", async () => {
    const created = await d.call("POST", "/runs", {
      spec: { name: "keyless", model: { provider: "keyless", id: "m1" } },
      prompt: "hello",
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId } = created.body;
    await waitForState(d, rootAgentId, "done");
    const refused = await refusalsIn(d, runId, rootAgentId);
    assert.ok(refused.length >= 1, "at least the first call was refused");
    for (const e of refused) {
      assert.deepEqual([e.data.tool, e.data.code], ["model", "MODEL_CALL_REFUSED"]);
      assert.match(e.data.message, /^swarmd has no credentials for keyless: /);
    }
    const view = await viewOf(d, rootAgentId);
    assert.equal(view.outcome, "failed");
    assert.equal(
      view.toolErrors,
      refused.reduce((n, e) => n + e.data.count, 0),
    );
  });
});
