import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { onFaultRuntimes } from "../support/fault-runtimes.ts";
import { openEvents, type SseConnection, type SseMessage } from "../support/sse-client.ts";

const echo = (name: string) => ({ name, script: [] });
await onFaultRuntimes("restart after SIGKILL: nothing lost, nothing twice", (rt) => {
  it("survives kills mid-turn, mid-spawn with waitFor, mid-subtree-pause, mid-subtree-stop and between a turn's end and its result", {
    timeout: 600_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-faults-"));
    const runtime = rt.open(dataDir); // a second view of the same sandboxes
    let d = await spawnDaemon(dataDir, rt.env);
    const seen: SseMessage[] = []; // every persisted event any watcher received before a kill
    let watcher: SseConnection | undefined;
    try {
      // A run of 21 agents in three levels: root → 4 children → 4 grandchildren each.
      const created = (
        await d.call("POST", "/runs", { spec: echo("root"), keepAlive: true, budget: { maxAgents: 100 } })
      ).body;
      const { runId, rootAgentId: root } = created;
      const spawn = async (parent: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
        (await d.call("POST", `/runs/${runId}/agents`, { parentAgentId: parent, spec, keepAlive: true, ...extra })).body
          .agentId as string;
      await waitState(d, root, "running");
      const children: string[] = [];
      for (let i = 0; i < 4; i++) children.push(await spawn(root, echo(`c${i}`)));
      const grand: string[][] = [];
      for (const [i, child] of children.entries()) {
        await waitState(d, child, "running");
        const row: string[] = [];
        for (let j = 0; j < 4; j++) {
          const spec =
            i === 0 && j === 0
              ? {
                  name: "sleeper",
                  script: [{ tool: "bash", args: { command: "sleep 1.5; echo slept" } }, { text: "after sleep" }],
                }
              : echo(`g${i}${j}`);
          row.push(await spawn(child, spec));
        }
        grand.push(row);
      }
      for (const id of grand.flat()) await waitState(d, id, "running");
      assert.equal((await d.call("GET", `/runs/${runId}`)).body.agents.length, 21);

      const watch = async () => {
        const last = seen.length > 0 ? seen.at(-1)!.id : undefined;
        watcher = await openEvents(d.url, runId, last === undefined ? {} : { lastEventId: last });
        return watcher;
      };
      const restart = async () => {
        await new Promise((r) => setTimeout(r, 50)); // let the watcher read what was sent before the kill
        watcher?.close();
        seen.push(...(watcher?.messages.filter((m) => m.id !== undefined) ?? []));
        await d.kill("SIGKILL");
        d = await spawnDaemon(dataDir, rt.env);
        // The reconnecting client gets exactly what it missed: the next id follows its last one.
        const w = await watch();
        const next = await w.waitFor((m) => m.id !== undefined, 30_000).catch(() => undefined);
        if (next) assert.equal(next.id, seen.at(-1)!.id! + 1, "no gap and no repeat after a reconnect");
      };

      // 1. Mid-turn: the harness finishes the turn while the service is down; its result arrives once.
      let w = await watch();
      await d.call("POST", `/agents/${grand[0]![0]}/prompt`, { text: "go" });
      await w.waitFor((m) => m.event === "tool_start" && m.data.agentId === grand[0]![0]);
      await restart();
      assert.equal((await d.call("GET", `/agents/${grand[0]![0]}/result?wait=60`)).body.result, "after sleep");

      // 2. Mid-spawn with waitFor: the child keeps waiting across the restart, then reads its input.
      const dep = grand[1]![0]!;
      const waiter = await spawn(
        children[1]!,
        {
          name: "waiter",
          script: [{ tool: "bash", args: { command: `cat /inputs/${dep}.md` } }, { text: "input: {{lastToolResult}}" }],
        },
        { waitFor: [dep], prompt: "read", keepAlive: false },
      );
      await restart();
      assert.equal((await d.call("GET", `/agents/${waiter}`)).body.state, "spawning");
      await d.call("POST", `/agents/${dep}/prompt`, { text: "dependency done" });
      assert.equal((await d.call("GET", `/agents/${waiter}/result?wait=60`)).body.result, "input: dependency done");

      // 3. Mid-subtree-pause: every member is either paused (a prefix, parents first) or running, as recorded.
      const pauseTree = [children[2]!, ...grand[2]!];
      void d.call("POST", `/agents/${children[2]}/pause`, { scope: "subtree" }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 40));
      await restart();
      for (const id of pauseTree) await assertSandboxMatches(d, runtime, id);
      if ((await d.call("GET", `/agents/${children[2]}`)).body.state === "paused") {
        assert.equal((await d.call("POST", `/agents/${children[2]}/resume`, { scope: "subtree" })).status, 202);
      }
      for (const id of pauseTree) assert.equal((await d.call("GET", `/agents/${id}`)).body.state, "running", id);

      // 4. Mid-subtree-stop: nobody is lost; stopping again finishes the job.
      const stopTree = [children[3]!, ...grand[3]!];
      void d.call("POST", `/agents/${children[3]}/stop`, { scope: "subtree" }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 60));
      await restart();
      assert.equal((await d.call("POST", `/agents/${children[3]}/stop`, { scope: "subtree" })).status, 202);
      for (const id of stopTree) assert.equal((await d.call("GET", `/agents/${id}`)).body.outcome, "aborted", id);

      // 5. Between a turn's end and its handle_settled.
      const quick = grand[0]![1]!;
      w = watcher!;
      await d.call("POST", `/agents/${quick}/prompt`, { text: "quick" });
      await w.waitFor((m) => m.event === "agent_end" && m.data.agentId === quick);
      await restart();
      assert.equal((await d.call("GET", `/agents/${quick}/result?wait=60`)).body.result, "quick");

      // The whole ledger: gap-free, never reused, every finished turn's result readable, nothing twice.
      const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
      const full = await openEvents(d.url, runId);
      await full.waitFor((m) => m.id === snapshot.asOf, 30_000);
      full.close();
      const persisted = full.messages.filter((m) => m.id !== undefined);
      assert.deepEqual(
        persisted.map((m) => m.id),
        persisted.map((_, i) => i + 1),
        "seq gap-free from 1",
      );
      for (const old of seen) assert.deepEqual(persisted[old.id! - 1], old, `seq ${old.id} kept its event`);
      const count = (type: string, agentId: string) =>
        persisted.filter((m) => m.event === type && m.data.agentId === agentId).length;
      for (const agent of snapshot.agents as Array<{ agentId: string }>) {
        assert.ok(count("agent_provisioned", agent.agentId) <= 1, `one sandbox for ${agent.agentId}`);
        assert.ok(count("agent_ended", agent.agentId) <= 1, `one end for ${agent.agentId}`);
      }
      assert.equal(count("handle_settled", grand[0]![0]!), 1, "the mid-turn result settled once");
      assert.equal(count("handle_settled", quick), 1, "the result caught between turn end and settle settled once");
      for (const settled of persisted.filter((m) => m.event === "handle_settled")) {
        const result = await d.call("GET", `/agents/${settled.data.agentId}/result`);
        assert.equal(result.status, 200);
        assert.equal(typeof result.body.result, "string");
      }

      // No sandbox, process, container or folder leaked or duplicated once the run is deleted.
      const sandboxIds = persisted.filter((m) => m.event === "agent_provisioned").map((m) => String(m.data.sandboxId));
      assert.equal(new Set(sandboxIds).size, sandboxIds.length, "no sandbox used twice");
      assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204);
      assert.deepEqual(await runtime.list(AbortSignal.timeout(30_000)), []);
      assert.deepEqual(await rt.leftovers(sandboxIds), []);
    } catch (err) {
      // The daemon's own log says why a request hung up or an agent failed.
      console.error(`daemon output:\n${d.output()}`);
      throw err;
    } finally {
      watcher?.close();
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * What the ledger says and what the sandbox is agree: paused ⇔ frozen, unless the agent hibernated
 * (idle for SWARM_HIBERNATE_AFTER_MS during this long test): then its sandbox has nothing to freeze.
 */
async function assertSandboxMatches(d: DaemonProcess, runtime: SandboxRuntime, agentId: string): Promise<void> {
  const view = (await d.call("GET", `/agents/${agentId}`)).body;
  const info = await runtime.inspect(view.sandboxId, AbortSignal.timeout(10_000));
  const expected = view.hibernated ? "hibernated" : view.state === "paused" ? "frozen" : "running";
  assert.equal(info?.status, expected, `${agentId} is ${view.state}${view.hibernated ? ", hibernated" : ""}`);
}
