/**
 * Hibernation over HTTP: an agent idle between turns gives up its harness and comes back on the
 * next prompt or steer with the same session, as if it had never left. Runs on the simulated
 * runtime (or `SWARM_E2E_RUNTIME`); the runtimes' own hibernation (no process left, files and event
 * log kept) is the sandbox contract's, and across a daemon SIGKILL it is
 * test/faults/hibernation-sigkill.test.ts, on the process and docker runtimes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { asleep, viewWhen } from "../support/agent-view.ts";
import { type Daemon, e2eRuntime, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { sandboxProcesses } from "../support/daemon-process.ts";

const HIBERNATE_AFTER_MS = 300;

describe(`hibernation (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ hibernateAfterMs: HIBERNATE_AFTER_MS });
  });
  after(() => d.stop());

  /** The run's persisted events of one type for one agent, from the daemon's ledger. */
  const eventsOf = async (runId: string, agentId: string, type: string) =>
    (await d.ledger.read(runId, 0)).filter((e) => e.agentId === agentId && e.type === type);

  /** The agent's result once `turns` turns settled. */
  const resultAfter = async (runId: string, agentId: string, turns: number) => {
    const deadline = Date.now() + 60_000;
    while ((await eventsOf(runId, agentId, "handle_settled")).length < turns) {
      if (Date.now() > deadline) throw new Error(`agent ${agentId} never settled ${turns} turns`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return (await d.call("GET", `/agents/${agentId}/result`)).body.result as string | null;
  };

  /** A keepAlive root that ran one turn, then idled into hibernation. */
  async function sleepingRoot(script: Json[] = [{ text: "first" }, { text: "second" }, { text: "third" }]) {
    const created = (
      await d.call("POST", "/runs", { spec: { name: "sleeper", script }, keepAlive: true, prompt: "one" })
    ).body;
    const agentId = created.rootAgentId as string;
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "first");
    const view = await asleep(d.call, agentId);
    return { runId: created.runId as string, agentId, view };
  }

  it("an idle agent hibernates: still running, no harness process, its last session stats kept", async () => {
    const { agentId, view } = await sleepingRoot();
    assert.equal(view.state, "running");
    assert.equal(view.sessionStats?.userMessages, 1, "the stats of its last session");
    const info = await d.runtime.inspect(view.sandboxId, AbortSignal.timeout(10_000));
    assert.equal(info?.status, "hibernated");
    // The process runtime's harness and everything of its sandbox are gone (the contract checks it too).
    if (e2eRuntime() === "process") assert.deepEqual(sandboxProcesses([view.sandboxId]), []);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a prompt wakes it with the same session: the history goes on", async () => {
    const { runId, agentId, view } = await sleepingRoot();
    const sessionId = view.sessionStats?.sessionId;
    assert.equal((await d.call("POST", `/agents/${agentId}/prompt`, { text: "two" })).status, 202);
    assert.equal(await resultAfter(runId, agentId, 2), "second");
    const awake = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.equal(awake.hibernated, undefined, "awake again");
    assert.equal(awake.sessionStats.sessionId, sessionId, "the same pi session");
    assert.equal(awake.sessionStats.userMessages, 2, "both prompts are in its history");
    assert.equal(awake.sessionStats.assistantMessages, 2);
    assert.equal((await eventsOf(runId, agentId, "agent_woke")).length, 1);
    // Harness events keep one gap-free hseq sequence across the two harness processes.
    const hseqs = (await d.ledger.read(runId, 0))
      .filter((e) => e.agentId === agentId && typeof e.data.hseq === "number")
      .map((e) => e.data.hseq as number);
    assert.ok(hseqs.length > 2);
    assert.deepEqual(
      hseqs,
      [...hseqs].sort((a, b) => a - b),
      "in order",
    );
    assert.equal(new Set(hseqs).size, hseqs.length, "no hseq twice");
    // And it hibernates again once idle.
    await asleep(d.call, agentId);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a steer to a hibernated agent starts a turn in the woken harness", async () => {
    const { runId, agentId } = await sleepingRoot([{ text: "first" }, { text: "steered: {{lastUserMessage}}" }]);
    const steered = await d.call("POST", `/agents/${agentId}/steer`, { message: "go on" });
    assert.equal(steered.status, 202);
    assert.equal(steered.body.delivery, "turn");
    assert.equal(await resultAfter(runId, agentId, 2), "steered: go on");
    await viewWhen(d.call, agentId, (v) => v.sessionStats?.userMessages === 2, "took the steer as its second message");
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("a subtree steer wakes the hibernated parent with the composed message; its hibernated child stays asleep", async () => {
    const { runId, agentId } = await sleepingRoot([{ text: "first" }, { text: "root: {{lastUserMessage}}" }]);
    const child = (
      await d.call("POST", `/runs/${runId}/agents`, {
        parentAgentId: agentId,
        spec: { name: "kid", script: [] },
        keepAlive: true,
      })
    ).body.agentId as string;
    await asleep(d.call, child);
    await asleep(d.call, agentId);
    const steered = await d.call("POST", `/agents/${agentId}/steer`, { message: "all of you", scope: "subtree" });
    assert.equal(steered.status, 202);
    assert.equal(steered.body.delivery, "turn");
    const text = await resultAfter(runId, agentId, 2);
    assert.ok(
      text?.startsWith("root: ") && text.includes("all of you") && text.includes(child),
      `the composed message reached the woken root: ${text}`,
    );
    assert.equal((await eventsOf(runId, agentId, "agent_woke")).length, 1);
    assert.equal((await eventsOf(runId, child, "agent_woke")).length, 0, "children get nothing directly");
    await d.call("POST", `/agents/${agentId}/stop`, { scope: "subtree" });
  });

  it("pause marks a hibernated agent paused without waking it; resume returns it to hibernation; a prompt while paused waits", async () => {
    const { runId, agentId } = await sleepingRoot();
    const paused = await d.call("POST", `/agents/${agentId}/pause`, {});
    assert.equal(paused.body.results[0].outcome, "applied");
    const view = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.equal(view.state, "paused");
    assert.equal(view.hibernated, true);
    await d.call("POST", `/agents/${agentId}/prompt`, { text: "while paused" });
    await new Promise((r) => setTimeout(r, HIBERNATE_AFTER_MS * 2));
    assert.equal((await eventsOf(runId, agentId, "agent_woke")).length, 0, "a paused agent is not woken");
    assert.equal((await d.call("POST", `/agents/${agentId}/resume`, {})).body.results[0].outcome, "applied");
    // The prompt that waited runs now, in the woken harness.
    assert.equal(await resultAfter(runId, agentId, 2), "second", "the prompt that waited ran");
    await viewWhen(d.call, agentId, (v) => v.sessionStats?.userMessages === 2, "kept its history");
    await asleep(d.call, agentId);
    await d.call("POST", `/agents/${agentId}/pause`, {});
    await d.call("POST", `/agents/${agentId}/resume`, {});
    const resumed = (await d.call("GET", `/agents/${agentId}`)).body;
    assert.equal(resumed.state, "running");
    assert.equal(resumed.hibernated, true, "resumed into hibernation: nothing to do, nothing woken");
    assert.equal((await eventsOf(runId, agentId, "agent_woke")).length, 1);
    await d.call("POST", `/agents/${agentId}/stop`, {});
  });

  it("stop ends a hibernated agent and removes its sandbox", async () => {
    const { agentId, view } = await sleepingRoot();
    const stopped = await d.call("POST", `/agents/${agentId}/stop`, {});
    assert.equal(stopped.body.results[0].outcome, "applied");
    await waitForState(d, agentId, "aborted");
    assert.equal(await d.runtime.inspect(view.sandboxId, AbortSignal.timeout(10_000)), undefined);
  });

  it("a child forks from a hibernated parent's files, and the parent stays asleep", async () => {
    const { runId, agentId } = await sleepingRoot([
      { tool: "bash", args: { command: "echo kept-on-disk > notes.txt" } },
      { text: "first" },
    ]);
    const child = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: agentId,
      spec: {
        name: "reader",
        script: [{ tool: "bash", args: { command: "cat notes.txt" } }, { text: "{{lastToolResult}}" }],
      },
      prompt: "read",
    });
    assert.equal(child.status, 202);
    assert.equal((await d.call("GET", `/agents/${child.body.agentId}/result?wait=60`)).body.result, "kept-on-disk\n");
    assert.equal((await eventsOf(runId, agentId, "agent_woke")).length, 0, "the fork did not wake the parent");
    await d.call("POST", `/agents/${agentId}/stop`, { scope: "subtree" });
  });
});
