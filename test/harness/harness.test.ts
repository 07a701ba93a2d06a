import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import { HarnessRejected } from "../../src/harness/client.ts";
import { CONTROL_FILES, type HarnessEventMessage } from "../../src/harness/protocol.ts";
import { settledText, startHarness, until } from "../support/harness-fixture.ts";

const isSettled = (e: HarnessEventMessage) => e.event === "turn_settled";

describe("harness", () => {
  it("runs a prompt: lifecycle events in order, text deltas, and the script's final text", async (t) => {
    const h = await startHarness({
      name: "t",
      script: [
        { tool: "bash", args: { command: "echo from-tool" } },
        { text: "tool said {{lastToolResult}}to {{lastUserMessage}}", delayMs: 200 },
      ],
    });
    t.after(() => h.stop());
    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "hello" });
    const settled = await c.waitFor(isSettled);
    assert.equal(settledText(settled), "tool said from-tool\nto hello");
    assert.equal((settled.data as { outcome: string }).outcome, "success");

    const names = c.events.map((e) => e.event);
    const order: HarnessEventMessage["event"][] = [
      "agent_start",
      "turn_start",
      "tool_start",
      "tool_end",
      "turn_end",
      "turn_start",
      "text",
      "turn_end",
      "agent_end",
      "turn_settled",
    ];
    let at = -1;
    for (const name of order) {
      const next = names.indexOf(name, at + 1);
      assert.ok(next > at, `${name} after position ${at} in ${names.join(",")}`);
      at = next;
    }
    const deltas = c.events.filter((e) => e.event === "text").map((e) => (e.data as { delta: string }).delta);
    assert.ok(deltas.length > 1, `a paced answer streams as several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(""), "tool said from-tool\nto hello");
    assert.deepEqual(
      c.events.map((e) => e.hseq),
      c.events.map((_, i) => i + 1),
      "hseq is gap-free from 1",
    );

    // Script exhausted: every further model call echoes the newest user message.
    await c.client.request({ type: "prompt", message: "echo me" });
    const second = await c.waitFor((e) => isSettled(e) && e.hseq > settled.hseq);
    assert.equal(settledText(second), "echo me");
  });

  it("delivers a steer sent during a running bash tool after the tool finishes, before the next model call", async (t) => {
    const h = await startHarness({
      name: "t",
      script: [
        { tool: "bash", args: { command: "sleep 1.5; echo slept" } },
        { text: "next call saw: {{lastUserMessage}}" },
      ],
    });
    t.after(() => h.stop());
    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "start" });
    await c.waitFor((e) => e.event === "tool_start");
    await c.client.request({ type: "steer", message: "change course" });
    const settled = await c.waitFor(isSettled);
    assert.equal(settledText(settled), "next call saw: change course");
    const toolEnd = c.events.find((e) => e.event === "tool_end");
    assert.ok(toolEnd, "the tool ended");
    assert.equal((toolEnd.data as { output: string }).output, "slept\n", "the tool ran to its end");
    const steerMessage = c.events.find(
      (e) => e.event === "message_start" && (e.data as { role: string }).role === "user" && e.hseq > toolEnd.hseq,
    );
    const secondCall = c.events.find((e) => e.event === "text");
    assert.ok(steerMessage && toolEnd && secondCall);
    assert.ok(toolEnd.hseq < steerMessage.hseq && steerMessage.hseq < secondCall.hseq);
  });

  it("refuses a steer when no turn runs with the code NO_TURN_RUNNING, which the daemon acts on", async (t) => {
    const h = await startHarness({ name: "t", script: [{ text: "done" }] });
    t.after(() => h.stop());
    const c = await h.connect();
    const refusedWithCode = (err: unknown) => {
      assert.ok(err instanceof HarnessRejected, String(err));
      assert.equal(err.harnessCode, "NO_TURN_RUNNING");
      return true;
    };
    // Before the agent is made, and once it is (its side is built into pi.cjs, apart from the socket's).
    await assert.rejects(c.client.request({ type: "steer", message: "too early" }), refusedWithCode);
    await c.client.request({ type: "prompt", message: "go" });
    await c.waitFor(isSettled);
    await assert.rejects(c.client.request({ type: "steer", message: "too late" }), refusedWithCode);
  });

  it("reads its spec when it makes its agent, not at start: a spec it cannot read ends it then, with the reason in its output", async (t) => {
    const h = await startHarness({ name: "t", script: [] });
    t.after(() => h.stop());
    let output = "";
    h.child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => h.child.once("exit", resolve));
    const c = await h.connect();
    assert.deepEqual(await c.client.request({ type: "get_state" }), {
      busy: false,
      queued: 0,
      loaded: false,
      lastHseq: 0,
    });
    // Read at the first prompt: a file cut off after the harness started is what it finds.
    writeFileSync(join(h.controlDir, CONTROL_FILES.spec), '{"name": "t", "scr');
    void c.client.request({ type: "prompt", message: "go" }).catch(() => undefined);
    assert.equal(await exited, 1);
    assert.match(output, /cannot make the agent: SyntaxError/);
  });

  it("abort ends a running turn promptly and kills the tool's process", async (t) => {
    const h = await startHarness({
      name: "t",
      script: [{ tool: "bash", args: { command: "echo $$ > sleep.pid && exec sleep 987" } }],
    });
    t.after(() => h.stop());
    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "go" });
    const pidFile = join(h.workDir, "sleep.pid");
    await until(
      () => readIfExists(pidFile).trim().length > 0,
      10_000,
      () => "the tool never started",
    );
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    assert.ok(isAlive(pid), "sleep runs before the abort");
    const started = Date.now();
    await c.client.request({ type: "abort" });
    const settled = await c.waitFor(isSettled, 5_000);
    assert.ok(Date.now() - started < 3_000, "abort is prompt");
    assert.equal((settled.data as { outcome: string }).outcome, "aborted");
    await until(
      () => !isAlive(pid),
      3_000,
      () => `sleep ${pid} still alive after abort`,
    );
  });

  it("abort in the middle of an answer settles the turn with the text streamed so far", async (t) => {
    const full = "a long answer that streams out slowly, word by word, for several seconds";
    const h = await startHarness({ name: "t", script: [{ text: full, delayMs: 6_000 }] });
    t.after(() => h.stop());
    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "go" });
    await c.waitFor((e) => e.event === "text");
    await c.client.request({ type: "abort" });
    const settled = await c.waitFor(isSettled, 5_000);
    const text = settledText(settled);
    assert.equal((settled.data as { outcome: string }).outcome, "aborted");
    assert.ok(text && text.length > 0 && text.length < full.length && full.startsWith(text), `partial text: ${text}`);
  });

  it("answers get_session_stats within 2 seconds", async (t) => {
    const h = await startHarness({ name: "t", script: [{ text: "ok" }] });
    t.after(() => h.stop());
    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "hi" });
    await c.waitFor(isSettled);
    const started = Date.now();
    const stats = (await c.client.request({ type: "get_session_stats" }, 2_000)) as {
      userMessages: number;
      assistantMessages: number;
    };
    assert.ok(Date.now() - started < 2_000);
    assert.equal(stats.userMessages, 1);
    assert.equal(stats.assistantMessages, 1);
  });

  it("replays exactly the events after N to a client that reconnects, and the turn finishes unobserved", async (t) => {
    const h = await startHarness({
      name: "t",
      script: [{ tool: "bash", args: { command: "sleep 0.5; echo done" } }, { text: "finished while you were away" }],
    });
    t.after(() => h.stop());
    const first = await h.connect();
    await first.client.request({ type: "prompt", message: "go" });
    await first.waitFor((e) => e.event === "tool_start");
    first.close();
    const lastSeen = Math.max(...first.events.map((e) => e.hseq));

    const log = join(h.controlDir, CONTROL_FILES.eventLog);
    await until(
      () => readIfExists(log).includes('"turn_settled"'),
      10_000,
      () => "the turn did not finish without a client",
    );
    const finishedAt = Date.now();

    const second = await h.connect(lastSeen);
    const settled = await second.waitFor(isSettled);
    assert.ok(settled.at <= finishedAt, "the turn settled before the client came back");
    assert.deepEqual(
      second.events.map((e) => e.hseq),
      Array.from({ length: settled.hseq - lastSeen }, (_, i) => lastSeen + 1 + i),
      "no gap, no duplicate",
    );
    assert.equal(settledText(settled), "finished while you were away");
  });

  it("sends spawn_agent as a host call, waiting for a client, and hands the answer to the tool", async (t) => {
    const h = await startHarness({
      name: "t",
      script: [
        { tool: "spawn_agent", args: { spec: { name: "child", script: [] }, prompt: "hi child", waitFor: ["a_1"] } },
        { text: "spawned: {{lastToolResult}}" },
      ],
    });
    t.after(() => h.stop());
    const first = await h.connect();
    await first.client.request({ type: "prompt", message: "spawn one" });
    await first.waitFor((e) => e.event === "tool_start");
    first.close(); // the call is made (or re-sent) to whichever client connects next

    const second = await h.connect();
    const call = await second.waitForHostCall();
    assert.equal(call.method, "spawn_agent");
    assert.deepEqual(call.params, { spec: { name: "child", script: [] }, prompt: "hi child", waitFor: ["a_1"] });
    second.client.answer(call.id, { ok: true, data: { agentId: "a_c0ffee", state: "spawning" } });
    const settled = await second.waitFor(isSettled);
    assert.equal(settledText(settled), 'spawned: {"agentId":"a_c0ffee","state":"spawning"}');
  });

  it("answers 200 malformed lines with errors and still runs a prompt afterwards", async (t) => {
    const h = await startHarness({ name: "t", script: [] });
    t.after(() => h.stop());
    const raw = connect(join(h.controlDir, CONTROL_FILES.socket));
    t.after(() => raw.destroy());
    await new Promise<void>((resolve) => raw.once("connect", resolve));
    const responses: Array<{ success: boolean; error?: string }> = [];
    let buffer = "";
    raw.on("data", (d: Buffer) => {
      buffer += d.toString();
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const parsed = JSON.parse(line) as { type: string; success: boolean; error?: string };
        if (parsed.type === "response") responses.push(parsed);
      }
    });
    const bad = malformedLines(200);
    for (const line of bad) raw.write(`${line}\n`);
    await until(
      () => responses.length >= 200,
      20_000,
      () => `only ${responses.length} responses`,
    );
    assert.equal(responses.length, 200);
    assert.ok(responses.every((r) => r.success === false && typeof r.error === "string" && r.error.length > 0));
    assert.equal(h.child.exitCode, null, "the harness still runs");

    const c = await h.connect();
    await c.client.request({ type: "prompt", message: "still here" });
    assert.equal(settledText(await c.waitFor(isSettled)), "still here");
  });
});

function malformedLines(count: number): string[] {
  const kinds: Array<(i: number) => string> = [
    (i) => `{not json ${i}`,
    (i) => JSON.stringify({ type: `bogus_${i}` }),
    () => JSON.stringify({ type: "prompt" }),
    () => JSON.stringify({ type: "prompt", message: 42 }),
    () => JSON.stringify({ type: "steer", message: null }),
    () => JSON.stringify({ type: "hello", after: -1 }),
    () => JSON.stringify([1, 2, 3]),
    () => "null",
    () => JSON.stringify({ type: "host_result", id: "nope", ok: true }),
    () => JSON.stringify({ nothing: "here" }),
    (i) => (i % 40 === 0 ? `"${"x".repeat(5 * 1024 * 1024)}"` : "\u2028{}"),
  ];
  return Array.from({ length: count }, (_, i) => kinds[i % kinds.length]!(i));
}

function readIfExists(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
