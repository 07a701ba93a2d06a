import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Json } from "../support/daemon.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { startAnthropicUpstream, type Upstream } from "../support/model-upstreams.ts";

const MIDS = 15;
const LEAVES_PER_MID = 19; // 1 + 15 + 285 = 301 agents
const kept = (name: string) => ({ name, script: [] });
/** A leaf's one turn: a bash step, then its output as the answer. */
const leafSpec = {
  name: "leaf",
  script: [
    { tool: "bash", args: { command: "echo $((6*7)) > answer; cat answer" } },
    { text: "leaf {{lastToolResult}}" },
  ],
};
const ANTHROPIC_KEY = "sk-ant-api03-simulated-e2e-key";

/** Run `work` over `items`, `width` at a time; answers in the items' order. */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = [];
  for (let i = 0; i < items.length; i += width)
    answers.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return answers;
}

/**
 * The daemon as a user's test suite starts it: its own process, `SWARM_RUNTIME=simulated`, driven
 * over HTTP only. Every sandbox lives in the daemon's memory, so a few hundred scripted agents take
 * seconds; what the API answers is what it answers on the other runtimes.
 */
describe("simulated runtime over HTTP (SWARM_RUNTIME=simulated, a daemon process)", { timeout: 120_000 }, () => {
  let dataDir: string;
  let d: DaemonProcess;
  let anthropic: Upstream;
  let env: Record<string, string>;

  before(async () => {
    anthropic = await startAnthropicUpstream({ answer: () => ({ reply: { text: "from the local upstream" } }) });
    dataDir = mkdtempSync(join(tmpdir(), "swarmd-simulated-"));
    const modelsFile = join(dataDir, "models.json");
    writeFileSync(modelsFile, JSON.stringify({ providers: { anthropic: { baseUrl: anthropic.url } } }));
    env = { SWARM_RUNTIME: "simulated", SWARM_MODELS: modelsFile, ANTHROPIC_API_KEY: ANTHROPIC_KEY };
    d = await spawnDaemon(join(dataDir, "data"), env);
  });
  after(async () => {
    await d?.kill("SIGTERM");
    await anthropic?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const agentsOf = async (runId: string): Promise<Json[]> => {
    const snapshot = await d.call("GET", `/runs/${runId}`);
    assert.equal(snapshot.status, 200);
    return snapshot.body.agents;
  };
  /** Poll the run's snapshot (one request for every agent) until `done` holds for its agents. */
  const untilAgents = async (runId: string, what: string, done: (agents: Json[]) => boolean): Promise<Json[]> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const agents = await agentsOf(runId);
      if (done(agents)) return agents;
      if (Date.now() > deadline)
        throw new Error(`run ${runId}: ${what} did not happen; states ${JSON.stringify(agents.map((a) => a.state))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const statesOf = (agents: Json[], ids: string[]) => ids.map((id) => agents.find((a) => a.agentId === id)?.state);

  it("runs a tree of 301 scripted agents: spawns, subtree pause and resume, results, subtree stop, delete", async () => {
    const created = await d.call("POST", "/runs", {
      spec: kept("root"),
      keepAlive: true,
      budget: { maxAgents: 400, spawnDepth: 2 },
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId: root } = created.body as { runId: string; rootAgentId: string };
    const spawn = async (parentAgentId: string, body: Record<string, unknown>) => {
      const reply = await d.call("POST", `/runs/${runId}/agents`, { parentAgentId, keepAlive: true, ...body });
      assert.equal(reply.status, 202, JSON.stringify(reply.body));
      return reply.body.agentId as string;
    };
    const mids = await inBatches([...Array(MIDS).keys()], 16, (i) => spawn(root, { spec: kept(`mid-${i}`) }));
    const leaves = await inBatches(
      mids.flatMap((mid) => Array<string>(LEAVES_PER_MID).fill(mid)),
      32,
      (mid) => spawn(mid, { spec: leafSpec, prompt: "go" }),
    );
    const leavesOf = new Map(mids.map((mid, i) => [mid, leaves.slice(i * LEAVES_PER_MID, (i + 1) * LEAVES_PER_MID)]));
    const everyone = [root, ...mids, ...leaves];
    assert.equal(new Set(everyone).size, 301);

    let agents = await untilAgents(
      runId,
      "every agent running",
      (all) => all.length === 301 && all.every((a) => a.state === "running"),
    );
    assert.deepEqual(
      agents.filter((a) => a.parentAgentId === root).map((a) => a.agentId),
      mids,
      "the root's children in spawn order",
    );
    const results = await inBatches(leaves, 32, (leaf) => d.call("GET", `/agents/${leaf}/result?wait=30`));
    for (const result of results)
      assert.deepEqual(
        [result.body.state, result.body.outcome, result.body.result],
        ["settled", "success", "leaf 42\n"],
      );

    // A subtree pause goes parents first and answers once every member is paused; resume goes leaves first.
    const [mid0, mid1] = [mids[0]!, mids[1]!];
    const paused = await d.call("POST", `/agents/${mid0}/pause`, { scope: "subtree" });
    assert.equal(paused.status, 202);
    assert.deepEqual(
      paused.body.results,
      [mid0, ...leavesOf.get(mid0)!].map((agentId) => ({ agentId, outcome: "applied" })),
    );
    agents = await agentsOf(runId);
    assert.deepEqual(
      [mid0, ...leavesOf.get(mid0)!].map((id) => agents.find((a) => a.agentId === id)?.pausedBy),
      ["operator", ...leavesOf.get(mid0)!.map(() => "cascade")],
    );
    assert.ok(
      statesOf(agents, [root, mid1, ...leavesOf.get(mid1)!]).every((s) => s === "running"),
      "the rest of the tree runs on",
    );
    const prompted = leavesOf.get(mid0)![0]!;
    assert.equal((await d.call("POST", `/agents/${prompted}/prompt`, { text: "while paused" })).status, 202);
    const resumed = await d.call("POST", `/agents/${mid0}/resume`, { scope: "subtree" });
    assert.deepEqual(
      resumed.body.results.map((r: Json) => r.agentId),
      [...leavesOf.get(mid0)!, mid0],
    );
    assert.ok(resumed.body.results.every((r: Json) => r.outcome === "applied"));
    // The prompt given while paused runs on resume (the script is spent: it echoes the prompt).
    for (let tries = 0; ; tries++) {
      const result = await d.call("GET", `/agents/${prompted}/result`);
      if (result.body.result === "while paused") break;
      assert.ok(tries < 200, `the prompt given while paused never ran: ${JSON.stringify(result.body)}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    // The whole tree at once.
    const all = await d.call("POST", `/agents/${root}/pause`, { scope: "subtree" });
    assert.equal(all.body.results.length, 301);
    assert.ok(all.body.results.every((r: Json) => r.outcome === "applied"));
    assert.ok((await agentsOf(runId)).every((a) => a.state === "paused"));
    const back = await d.call("POST", `/agents/${root}/resume`, { scope: "subtree" });
    assert.equal(back.body.results.at(-1).agentId, root);
    assert.ok((await agentsOf(runId)).every((a) => a.state === "running"));

    // A stop goes leaves first; the rest of the tree is untouched.
    const stopped = await d.call("POST", `/agents/${mid1}/stop`, { scope: "subtree" });
    assert.deepEqual(
      stopped.body.results,
      [...leavesOf.get(mid1)!, mid1].map((agentId) => ({ agentId, outcome: "applied" })),
    );
    agents = await agentsOf(runId);
    assert.ok(statesOf(agents, [mid1, ...leavesOf.get(mid1)!]).every((s) => s === "aborted"));
    assert.ok(statesOf(agents, [root, mid0, ...leavesOf.get(mid0)!]).every((s) => s === "running"));

    assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204);
    agents = await agentsOf(runId);
    assert.ok(
      agents.every((a) => a.state === "aborted" && a.outcome === "aborted"),
      "every agent ended aborted",
    );
    const kept0 = await d.call("GET", `/agents/${leavesOf.get(mid0)![1]}/result`);
    assert.deepEqual([kept0.body.outcome, kept0.body.result], ["success", "leaf 42\n"], "results outlive the run");
  });

  it("sends a real model's calls through the gateway to its provider, with the daemon's key", async () => {
    const created = await d.call("POST", "/runs", {
      spec: { name: "real", model: { provider: "anthropic", id: "claude-sonnet-4-5" } },
      prompt: "hello",
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=30`);
    assert.deepEqual([result.body.outcome, result.body.result], ["success", "from the local upstream"]);
    const call = anthropic.calls.at(-1)!;
    assert.equal(call.headers["x-api-key"], ANTHROPIC_KEY);
    assert.equal((call.body as { model: string }).model, "claude-sonnet-4-5");
    const usage = (await d.call("GET", `/runs/${created.body.runId}`)).body.usage;
    assert.equal(usage.calls, 1);
  });

  it("hibernates an idle agent and wakes it at the next prompt with its files and its conversation", async () => {
    const sleepy = await spawnDaemon(join(dataDir, "sleepy"), { ...env, SWARM_HIBERNATE_AFTER_MS: "300" });
    try {
      const spec = {
        name: "sleepy",
        script: [
          { tool: "bash", args: { command: "echo kept > f; cat f" } },
          { text: "first {{lastToolResult}}" },
          { tool: "bash", args: { command: "cat f" } },
          { text: "second {{lastToolResult}}" },
        ],
      };
      const created = await sleepy.call("POST", "/runs", { spec, prompt: "go", keepAlive: true });
      const agentId = created.body.rootAgentId as string;
      assert.equal((await sleepy.call("GET", `/agents/${agentId}/result?wait=30`)).body.result, "first kept\n");
      const agentView = async (): Promise<Json> => (await sleepy.call("GET", `/agents/${agentId}`)).body;
      let view = await agentView();
      for (let tries = 0; !view.hibernated; tries++) {
        assert.ok(tries < 200, `the idle agent never hibernated: ${JSON.stringify(view)}`);
        await new Promise((r) => setTimeout(r, 50));
        view = await agentView();
      }
      assert.equal(view.state, "running");
      assert.equal(view.sessionStats.userMessages, 1);

      assert.equal((await sleepy.call("POST", `/agents/${agentId}/prompt`, { text: "again" })).status, 202);
      for (
        let tries = 0;
        (await sleepy.call("GET", `/agents/${agentId}/result`)).body.result !== "second kept\n";
        tries++
      ) {
        assert.ok(tries < 200, "the woken agent never ran its second turn");
        await new Promise((r) => setTimeout(r, 50));
      }
      // Running, or hibernated again with the stats of the session it had: either way both turns are in it.
      view = await agentView();
      for (let tries = 0; !view.sessionStats; tries++) {
        assert.ok(tries < 200, `no session stats: ${JSON.stringify(view)}`);
        await new Promise((r) => setTimeout(r, 50));
        view = await agentView();
      }
      assert.equal(view.sessionStats.userMessages, 2, "the woken session holds the first turn too");
    } finally {
      await sleepy.kill("SIGTERM");
    }
  });

  it("ends the live agents of a simulated run lost after a daemon restart, and goes on", async () => {
    const created = await d.call("POST", "/runs", { spec: kept("root"), keepAlive: true });
    const { runId, rootAgentId: root } = created.body as { runId: string; rootAgentId: string };
    const child = (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: root,
        spec: leafSpec,
        prompt: "go",
        keepAlive: true,
      })
    ).body.agentId as string;
    assert.equal((await d.call("GET", `/agents/${child}/result?wait=30`)).body.result, "leaf 42\n");

    await d.kill("SIGTERM");
    d = await spawnDaemon(join(dataDir, "data"), env);
    // The restart answers at once; each agent finds its sandbox gone as its machine reattaches.
    await waitState(d, root, "done", 30_000);
    await waitState(d, child, "done", 30_000);
    const agents = await agentsOf(runId);
    for (const agent of agents) {
      assert.equal(agent.state, "done");
      assert.equal(agent.outcome, "lost");
    }
    const ended = (await d.call("GET", `/agents/${child}`)).body;
    assert.equal(ended.outcome, "lost");
    assert.equal(
      (await d.call("GET", `/agents/${child}/result`)).body.result,
      "leaf 42\n",
      "a settled result survives",
    );
    assert.equal((await d.call("POST", `/agents/${root}/prompt`, { text: "still there?" })).status, 409);

    const next = await d.call("POST", "/runs", { spec: leafSpec, prompt: "go" });
    assert.equal(
      (await d.call("GET", `/agents/${next.body.rootAgentId}/result?wait=30`)).body.result,
      "leaf 42\n",
      "new runs work",
    );
  });
});
