/**
 * The two windows the chaos test (chaos.test.ts) hits at random, made to happen on purpose: a
 * daemon killed while an agent's spawn prompt is on its way to the harness (issue 22, item 8).
 *
 * The spawn prompt is handed to the harness when the agent first runs; the ledger learns the
 * harness took it (`prompts!`) only from the harness's answer. Killed in between, the daemon used to
 * restore the agent as one that never had a prompt (no turn run, none owed), so:
 *   1. when the prompt never reached the harness, nobody sent it again: the agent waited forever;
 *   2. when the harness took it, its turn ran and settled, but the agent counted no turn and never ended.
 *
 * Both are made deterministic with a child spawned under a paused parent: it is provisioned and
 * frozen before its prompt is sent (the prompt waits in the machine), and it sends the prompt on
 * resume, into a harness that first loads pi (hundreds of ms) before it answers.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { type FaultRuntime, onFaultRuntimes } from "../support/fault-runtimes.ts";
import { until } from "../support/poll.ts";
import { openEvents } from "../support/sse-client.ts";

const leaf = { name: "leaf", script: [{ text: "leaf done" }] };

interface Setup {
  d: DaemonProcess;
  runId: string;
  parent: string;
  child: string;
  childSandbox: string;
}

/** A keepAlive root, a keepAlive parent paused with its subtree, and a child spawned under it with a prompt. */
async function pausedParentWithChild(d: DaemonProcess): Promise<Setup> {
  const run = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
  await waitState(d, run.rootAgentId, "running");
  const spawn = async (parentAgentId: string, body: Record<string, unknown>) =>
    (await d.call("POST", `/runs/${run.runId}/agents`, { parentAgentId, ...body })).body.agentId as string;
  const parent = await spawn(run.rootAgentId, { spec: { name: "parent", script: [] }, keepAlive: true });
  await waitState(d, parent, "running");
  assert.equal((await d.call("POST", `/agents/${parent}/pause`, { scope: "subtree" })).status, 202);
  const child = await spawn(parent, { spec: leaf, prompt: "go" });
  await waitState(d, child, "paused"); // provisioned, then frozen at once: its prompt was never sent
  const childSandbox = (await d.call("GET", `/agents/${child}`)).body.sandboxId as string;
  return { d, runId: run.runId, parent, child, childSandbox };
}

/** The harness's own log of the child: how many prompts it took and turns it settled. */
function harnessLog(runtime: SandboxRuntime, sandboxId: string) {
  let lines: string[] = [];
  try {
    lines = readFileSync(join(runtime.controlDir(sandboxId), "events.jsonl"), "utf8").split("\n");
  } catch {
    // not written yet
  }
  const count = (name: string) => lines.filter((l) => l.includes(`"event":"${name}"`)).length;
  return { accepted: count("prompt_accepted"), settled: count("turn_settled") };
}

/**
 * The most the harness's log ever showed, read every 20 ms: the log goes with the sandbox once the
 * agent ends, and a prompt sent twice would show as a second `prompt_accepted` before that.
 */
function watchHarness(runtime: SandboxRuntime, sandboxId: string) {
  const most = { accepted: 0, settled: 0 };
  const timer = setInterval(() => {
    const now = harnessLog(runtime, sandboxId);
    most.accepted = Math.max(most.accepted, now.accepted);
    most.settled = Math.max(most.settled, now.settled);
  }, 20).unref();
  return { most, stop: () => clearInterval(timer) };
}

async function handleSettledCount(d: DaemonProcess, runId: string, agentId: string): Promise<number> {
  const asOf = (await d.call("GET", `/runs/${runId}`)).body.asOf as number;
  const stream = await openEvents(d.url, runId);
  await stream.waitFor((m) => m.id === asOf, 30_000);
  stream.close();
  return stream.messages.filter((m) => m.event === "handle_settled" && m.data.agentId === agentId).length;
}

/**
 * One daemon process on `rt` and a paused parent with a child whose spawn prompt was never sent;
 * `body` kills and restarts it (`restart`) and checks. What the child's harness and machine show is
 * printed on failure; everything is stopped and removed after.
 */
async function withPausedChild(
  rt: FaultRuntime,
  body: (t: {
    d: () => DaemonProcess;
    restart(): Promise<void>;
    runtime: SandboxRuntime;
    setup: Setup;
  }) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-spawn-prompt-"));
  const runtime = rt.open(dataDir);
  let d = await spawnDaemon(dataDir, rt.env);
  let s: Setup | undefined;
  try {
    s = await pausedParentWithChild(d);
    const restart = async () => {
      await d.kill("SIGKILL");
      d = await spawnDaemon(dataDir, { ...rt.env, SWARM_PORT: new URL(d.url).port });
    };
    await body({ d: () => d, restart, runtime, setup: s });
  } catch (err) {
    if (s) {
      const machine = (await d.call("GET", `/agents/${s.child}/machine`).catch(() => undefined))?.body;
      console.error(
        `child ${s.child}: harness ${JSON.stringify(harnessLog(runtime, s.childSandbox))}, machine ${JSON.stringify(machine?.value)}`,
      );
    }
    console.error(`daemon output:\n${d.output()}`);
    throw err;
  } finally {
    d.child.kill("SIGCONT");
    await d.kill("SIGKILL");
    for (const sb of await runtime.list(AbortSignal.timeout(30_000)))
      await runtime.close(sb.sandboxId, AbortSignal.timeout(30_000));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The child ended with its one turn's result: one prompt taken, one turn run, one `handle_settled`. */
async function endsOnce(d: DaemonProcess, setup: Setup, harness: ReturnType<typeof watchHarness>): Promise<void> {
  await until(
    async () => (await d.call("GET", `/agents/${setup.child}`)).body.state === "done",
    `child ${setup.child} ends`,
    60_000,
  );
  assert.equal((await d.call("GET", `/agents/${setup.child}/result`)).body.result, "leaf done");
  harness.stop();
  // The harness's log is sampled every 20 ms and goes with its sandbox once the agent ends, so a
  // turn that settles just before the end may not be seen there: the ledger's handle_settled is
  // the count of turns; the log shows the prompt was taken once and no second turn ran.
  assert.equal(harness.most.accepted, 1, "the harness took the prompt once");
  assert.ok(harness.most.settled <= 1, `one turn at most in the harness's log: ${harness.most.settled}`);
  assert.equal(await handleSettledCount(d, setup.runId, setup.child), 1, "one turn settled");
}

await onFaultRuntimes("a spawn prompt on its way to the harness when the daemon is killed", (rt) => {
  it("never reached the harness: it is sent again after the restart, and the agent ends", { timeout: 300_000 }, () =>
    withPausedChild(rt, async ({ d, restart, runtime, setup }) => {
      await restart();
      assert.equal((await d().call("GET", `/agents/${setup.child}`)).body.state, "paused");
      const harness = watchHarness(runtime, setup.childSandbox);
      assert.equal((await d().call("POST", `/agents/${setup.parent}/resume`, { scope: "subtree" })).status, 202);
      await endsOnce(d(), setup, harness);
    }),
  );

  it(
    "taken by the harness but not recorded: its turn is owed (not sent twice), and the agent ends",
    { timeout: 300_000 },
    () =>
      withPausedChild(rt, async ({ d, restart, runtime, setup }) => {
        assert.deepEqual(harnessLog(runtime, setup.childSandbox), { accepted: 0, settled: 0 });
        // The resume's answer comes after the child's prompt was written to its harness, which
        // first loads pi: stopping the daemon now keeps the harness's answer from being recorded.
        assert.equal((await d().call("POST", `/agents/${setup.parent}/resume`, { scope: "subtree" })).status, 202);
        d().child.kill("SIGSTOP");
        await until(
          () => harnessLog(runtime, setup.childSandbox).accepted === 1,
          "the harness takes the prompt",
          30_000,
        );
        const harness = watchHarness(runtime, setup.childSandbox);
        await restart();
        await endsOnce(d(), setup, harness);
      }),
  );
});
