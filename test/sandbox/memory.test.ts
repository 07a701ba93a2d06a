import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { isSwarmError } from "../../src/errors.ts";
import { memoryControl } from "../../src/harness/memory-control.ts";
import type { HarnessEventMessage } from "../../src/harness/protocol.ts";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { createTestHarnessClient, type TestHarnessClient } from "../support/harness-client.ts";
import { scriptGateway } from "../support/script-gateway.ts";
import { runSandboxContract } from "./contract.ts";

const NO_BACKGROUND =
  "a simulated sandbox runs bash in just-bash, which has no processes: `cmd &` runs to its end instead of in the background";

// Skipped: the cases whose sandbox keeps a process running after the tool call that started it
// (`cmd &`), which just-bash runs to its end instead. What else they check is checked below:
// - freeze: a background counter stands still while frozen ("holds a frozen harness still");
// - fork: the parent's background counter is not copied ("forks /work as it is now");
// - close: `sleep 1000 &` is the running tool a close kills ("closes a frozen sandbox in the middle of a tool");
// - listWhileClosing: sandboxes busy with `sleep 1000 &` close slowly enough to race list and
//   inspect; here those read a map, with nothing to race.
// Every other case runs, hibernation's included. A start takes 150 ms so that the contract can
// abort one in flight.
runSandboxContract(
  "simulated",
  async () => {
    const runtime = createMemoryRuntime({ startDelayMs: 150 });
    return {
      runtime,
      reopen: async () => createMemoryRuntime({ table: runtime.table, startDelayMs: 150 }),
      cleanup: () => runtime.destroy(),
      workDir: () =>
        assert.fail("a simulated sandbox keeps /work in memory; only the skipped cases read it on the host"),
      leaks: async (sandboxId) =>
        memoryControl(runtime.controlDir(sandboxId)) ? ["its in-memory control folder"] : [],
    };
  },
  { skip: { freeze: NO_BACKGROUND, fork: NO_BACKGROUND, close: NO_BACKGROUND, listWhileClosing: NO_BACKGROUND } },
);

describe("simulated runtime", () => {
  // The daemon serves each sandbox's model gateway; here the test does, answering each spec's script.
  const models = scriptGateway();
  const rt = models.wrap(createMemoryRuntime());
  after(async () => {
    await models.close();
    await rt.destroy();
  });
  const signal = () => AbortSignal.timeout(10_000);
  const script = (...steps: Array<Record<string, unknown>>) => ({ name: "t", script: steps });
  const started = async (spec: Record<string, unknown>, parent?: string) => {
    const req = { sandboxId: randomUUID(), runId: "r", agentId: "a", spec };
    const info = parent ? await rt.fork(parent, req, signal()) : await rt.provision(req, signal());
    await rt.startHarness(info.sandboxId, signal());
    const client = createTestHarnessClient(await rt.connect(info.sandboxId, signal()));
    client.hello(0);
    return { sandboxId: info.sandboxId, client };
  };
  const lastEvent = (client: TestHarnessClient) => client.events.at(-1)?.event;

  it("makes its agent's pi session at the first command that needs it, as the harness process does", async () => {
    const { client } = await started(script({ text: "made now" }));
    assert.deepEqual((await client.request({ type: "get_state" })).data, {
      busy: false,
      queued: 0,
      loaded: false,
      lastHseq: 0,
    });
    await client.request({ type: "prompt", message: "go" });
    const settled = (await client.waitFor(
      (m) => m.type === "event" && m.event === "turn_settled",
    )) as HarnessEventMessage;
    assert.deepEqual(settled.data, { outcome: "success", text: "made now" });
    assert.equal(((await client.request({ type: "get_state" })).data as { loaded: boolean }).loaded, true);
    client.close();
  });

  it("holds a frozen harness still: no answer, no event, no step of its tool, and goes on once thawed", async () => {
    const { sandboxId, client } = await started(
      script(
        { tool: "bash", args: { command: "sleep 0.2; echo woke > mark; cat mark" } },
        { text: "{{lastToolResult}}" },
      ),
    );
    await client.request({ type: "prompt", message: "go" });
    await client.waitFor((m) => m.type === "event" && m.event === "tool_start");
    await rt.freeze(sandboxId, signal());
    assert.equal((await rt.inspect(sandboxId, signal()))?.status, "frozen");
    const seen = client.events.length;
    let answered = false;
    const state = client.request({ type: "get_state" }).then((r) => {
      answered = true;
      return r;
    });
    await sleep(400); // past the tool's sleep: a running sandbox would have written its file by now
    assert.equal(answered, false, "a frozen harness does not answer");
    assert.equal(client.events.length, seen, `no event while frozen, got ${lastEvent(client)}`);
    assert.equal(
      await rt.table.sandboxes.get(sandboxId)?.files.exists("/work/mark"),
      false,
      "the command did not go on",
    );

    await rt.thaw(sandboxId, signal());
    assert.equal((await state).success, true);
    const settled = (await client.waitFor(
      (m) => m.type === "event" && m.event === "turn_settled",
    )) as HarnessEventMessage;
    assert.deepEqual(settled.data, { outcome: "success", text: "woke\n" });
    client.close();
  });

  it("logs nothing of a model answer while frozen: every event of it is stamped before the freeze or after the thaw", async () => {
    const { sandboxId, client } = await started(
      script({ text: "an answer long enough to stream as many deltas", delayMs: 600 }),
    );
    await client.request({ type: "prompt", message: "go" });
    await client.waitFor((m) => m.type === "event" && m.event === "text");
    await rt.freeze(sandboxId, signal());
    const frozenAt = Date.now();
    await sleep(300);
    const thawedAt = Date.now();
    await rt.thaw(sandboxId, signal());
    await client.waitFor((m) => m.type === "event" && m.event === "turn_settled");
    const stampedWhileFrozen = client.events.filter((e) => e.at > frozenAt && e.at < thawedAt).map((e) => e.event);
    assert.deepEqual(stampedWhileFrozen, []);
    client.close();
  });

  it("forks /work as it is now, not /inputs; the copies go their own ways", async () => {
    const parent = await started(
      script(
        { tool: "bash", args: { command: "mkdir -p src && echo one > src/a.txt" } },
        { text: "ok" },
        { tool: "bash", args: { command: "cat src/a.txt" } },
        { text: "{{lastToolResult}}" },
      ),
    );
    await rt.writeInputs(parent.sandboxId, { "dep.md": "input" }, signal());
    await parent.client.prompt("write");
    const child = await started(
      script(
        { tool: "bash", args: { command: "cat src/a.txt; ls /inputs | wc -l; echo two > src/a.txt" } },
        { text: "{{lastToolResult}}" },
      ),
      parent.sandboxId,
    );
    const { settled } = await child.client.prompt("read");
    assert.deepEqual(settled.data, { outcome: "success", text: "one\n0\n" });
    const again = await parent.client.prompt("read");
    assert.deepEqual(again.settled.data, { outcome: "success", text: "one\n" }, "the child's write stays in the child");

    await rt.freeze(parent.sandboxId, signal());
    await rt.fork(parent.sandboxId, { sandboxId: randomUUID(), runId: "r", agentId: "b", spec: script() }, signal());
    assert.equal((await rt.inspect(parent.sandboxId, signal()))?.status, "frozen", "a frozen parent stays frozen");
    await assert.rejects(
      rt.fork(randomUUID(), { sandboxId: randomUUID(), runId: "r", agentId: "c", spec: script() }, signal()),
      (err) => isSwarmError(err, "SANDBOX_NOT_FOUND"),
    );
    parent.client.close();
    child.client.close();
  });

  it("closes a frozen sandbox in the middle of a tool: the connection ends, its control folder goes", async () => {
    const { sandboxId, client } = await started(script({ tool: "bash", args: { command: "sleep 30" } }));
    await client.request({ type: "prompt", message: "go" });
    await client.waitFor((m) => m.type === "event" && m.event === "tool_start");
    await rt.freeze(sandboxId, signal());
    await rt.close(sandboxId, signal());
    await client.closed;
    assert.equal(await rt.inspect(sandboxId, signal()), undefined);
    assert.equal(memoryControl(rt.controlDir(sandboxId)), undefined);
    await assert.rejects(rt.connect(sandboxId, signal()), (err) => isSwarmError(err, "HARNESS_UNREACHABLE"));
    await rt.close(sandboxId, signal());
  });

  it("keeps each agent's script its own when many run in one process", async () => {
    const agents = await Promise.all(
      ["a", "b", "c"].map((word) => started(script({ text: `${word}1`, delayMs: 50 }, { text: `${word}2` }))),
    );
    const first = await Promise.all(agents.map(({ client }) => client.prompt("go")));
    const second = await Promise.all(agents.map(({ client }) => client.prompt("again")));
    assert.deepEqual(
      [...first, ...second].map((t) => (t.settled.data as { text: string }).text),
      ["a1", "b1", "c1", "a2", "b2", "c2"],
    );
    for (const { client } of agents) client.close();
  });

  it("runs sandboxes with no file, no socket and no process of their own", async () => {
    const fds = () => readdirSync("/proc/self/fd").length;
    const opened = fds();
    const agents = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        started(script({ tool: "bash", args: { command: `echo ${i} > n; cat n` } }, { text: "{{lastToolResult}}" })),
      ),
    );
    const turns = await Promise.all(agents.map(({ client }) => client.prompt("go")));
    assert.deepEqual(
      turns.map((t) => (t.settled.data as { text: string }).text),
      agents.map((_, i) => `${i}\n`),
    );
    assert.ok(fds() - opened < 10, `40 sandboxes with a turn each opened ${fds() - opened} file descriptors`);
    assert.equal(existsSync(rt.table.root), false, "their control folders are names in memory, not folders");
    for (const { sandboxId, client } of agents) {
      client.close();
      await rt.close(sandboxId, signal());
    }
  });
});
