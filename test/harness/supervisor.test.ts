import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { HARNESS_FILES } from "../../src/harness/harness-files.ts";
import { ensureHarnessBundle, HARNESS_NODE_FLAGS } from "../../src/harness/launch.ts";
import { CONTROL_FILES, type HarnessEventMessage } from "../../src/harness/protocol.ts";
import { openSandboxStream, type SandboxStream } from "../../src/sandbox/stream/sandbox-stream.ts";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";
import { createTestHarnessClient } from "../support/harness-client.ts";
import { attachRelay, streamGateway } from "../support/stream-supervisor.ts";

const signal = () => AbortSignal.timeout(30_000);

/** The supervisor as a plain child process on temporary folders (no container, no user switch), its stdio attachable. */
async function startSupervisor(t: TestContext, script: readonly ScriptStep[]) {
  const root = mkdtempSync(join(tmpdir(), "swarmd-supervisor-"));
  const dirs = { control: join(root, "control"), work: join(root, "work"), inputs: join(root, "inputs") };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...HARNESS_NODE_FLAGS,
      join(ensureHarnessBundle(), HARNESS_FILES.supervisor),
      "--control",
      dirs.control,
      "--work",
      dirs.work,
      "--inputs",
      dirs.inputs,
    ],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const gateway = await streamGateway(script);
  const streams: SandboxStream[] = [];
  t.after(async () => {
    if (process.env.DEBUG_SUPERVISOR) process.stderr.write(stderr);
    for (const s of streams) s.close();
    child.kill("SIGKILL");
    await exited;
    await gateway.close();
    rmSync(root, { recursive: true, force: true });
  });
  const attach = () => {
    const relay = attachRelay(child.stdin!, child.stdout!);
    const logs: string[] = [];
    const stream = openSandboxStream(relay.io, { model: gateway.model, log: (m) => logs.push(m) });
    streams.push(stream);
    return { stream, relay, logs };
  };
  const init = (stream: SandboxStream) =>
    stream.request({ op: "init", spec: { name: "t", script }, model: gateway.modelFile, env: {} }, signal());
  return { child, dirs, attach, init, stderr: () => stderr, exited };
}

const hseqs = (events: HarnessEventMessage[]) => events.map((e) => e.hseq);

describe("the supervisor over its stdio", () => {
  it("inits, starts, runs a turn with its model calls on the stream, hibernates and wakes with its session", async (t) => {
    const s = await startSupervisor(t, [
      { tool: "bash", args: { command: "cat /dev/null; echo one > note.txt; cat note.txt" } },
      { text: "first: {{lastToolResult}}" },
      { tool: "bash", args: { command: "cat note.txt" } },
      { text: "second: {{lastToolResult}}" },
    ]);
    const { stream, logs } = s.attach();
    await stream.ready;
    assert.deepEqual(await stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "stopped",
      hibernated: false,
      ended: false,
    });
    assert.deepEqual(await s.init(stream), { ok: true });
    assert.equal(statSync(join(s.dirs.control, CONTROL_FILES.spec)).mode & 0o777, 0o600);
    assert.equal(statSync(join(s.dirs.control, CONTROL_FILES.model)).mode & 0o777, 0o600);
    assert.deepEqual(await stream.request({ op: "inputs", files: { "a.md": "from a" } }, signal()), { ok: true });
    assert.equal(readFileSync(join(s.dirs.inputs, "a.md"), "utf8"), "from a");
    const big = "é".repeat(1024 * 1024); // 2 MiB: more than a line carries
    assert.deepEqual(await stream.request({ op: "inputs", files: { "big.md": big } }, signal()), { ok: true });
    assert.equal(readFileSync(join(s.dirs.inputs, "big.md"), "utf8"), big);
    assert.deepEqual(await stream.request({ op: "inputs", files: { "../x": "no" } }, signal()), {
      ok: false,
      error: 'input name "../x" is not a plain file name',
    });

    // A harness that ends before it serves: its output's tail is the answer. (Its event log cannot
    // be opened: a folder stands where the file goes.)
    const eventLog = join(s.dirs.control, CONTROL_FILES.eventLog);
    mkdirSync(eventLog);
    const failed = await stream.request({ op: "start" }, signal());
    assert.equal(failed.ok, false);
    assert.match((failed as { error: string }).error, /the harness exited \(code 1\) before it served: .*EISDIR/s);
    rmSync(eventLog, { recursive: true });
    assert.deepEqual(await stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "stopped",
      hibernated: false,
      ended: false,
    });

    await s.init(stream);
    assert.deepEqual(await stream.request({ op: "start" }, signal()), { ok: true });
    assert.deepEqual(await stream.request({ op: "start" }, signal()), { ok: true }, "start is idempotent");
    assert.deepEqual(await stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "running",
      hibernated: false,
      ended: false,
    });

    const client = createTestHarnessClient(stream.openHarness());
    client.hello(0);
    const first = await client.prompt("go");
    assert.equal((first.settled.data as { text: string }).text, "first: one\n");
    assert.deepEqual(
      hseqs(client.events),
      Array.from({ length: client.events.length }, (_, i) => i + 1),
    );
    const lastHseq = client.events.at(-1)!.hseq;

    assert.deepEqual(await stream.request({ op: "hibernate" }, signal()), { ok: true });
    await client.closed;
    assert.deepEqual(await stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "stopped",
      hibernated: true,
      ended: false,
    });
    assert.deepEqual(await stream.request({ op: "hibernate" }, signal()), { ok: true }, "hibernate is idempotent");
    const refused = createTestHarnessClient(stream.openHarness());
    await refused.closed; // no harness to connect to

    await s.init(stream);
    assert.deepEqual(await stream.request({ op: "start" }, signal()), { ok: true });
    assert.deepEqual(await stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "running",
      hibernated: false,
      ended: false,
    });
    const woken = createTestHarnessClient(stream.openHarness());
    woken.hello(lastHseq);
    const second = await woken.prompt("again");
    assert.equal((second.settled.data as { text: string }).text, "second: one\n");
    assert.equal(woken.events[0]!.hseq, lastHseq + 1, "hseq goes on, nothing replayed twice");
    const stats = (await woken.request({ type: "get_session_stats" })).data as { userMessages: number };
    assert.equal(stats.userMessages, 2, "the woken session holds the first turn");
    assert.deepEqual(logs, []);
  });

  it("a new attach after a dropped one loses and repeats no event, and garbage does not end the supervisor", async (t) => {
    const s = await startSupervisor(t, [
      { tool: "bash", args: { command: "sleep 1; echo slow" } },
      { text: "after {{lastToolResult}}" },
    ]);
    const one = s.attach();
    await one.stream.ready;
    await s.init(one.stream);
    assert.deepEqual(await one.stream.request({ op: "start" }, signal()), { ok: true });
    const client = createTestHarnessClient(one.stream.openHarness());
    client.hello(0);
    await client.request({ type: "prompt", message: "go" });
    await client.waitFor((m) => m.type === "event" && m.event === "tool_start");

    // The connection drops mid-turn (mid-line, maybe); what the supervisor writes meanwhile is lost.
    one.relay.cut();
    assert.match((await one.stream.ended).message, /ended/);
    await client.closed;
    const seen = client.events.at(-1)!.hseq;

    const two = s.attach();
    // Garbage, a cut line and a line over the cap before the hello: the supervisor reads past all of it.
    two.relay.raw('"t":"data","d":"AAAA"}\nnot json\n');
    two.relay.raw(`{"c":0,"t":"x","pad":"${"y".repeat(2 * 1024 * 1024)}"}\n`);
    await two.stream.ready;
    const again = createTestHarnessClient(two.stream.openHarness());
    again.hello(seen);
    const settled = await again.waitFor((m) => m.type === "event" && m.event === "turn_settled");
    assert.equal(((settled as HarnessEventMessage).data as { text: string }).text, "after slow\n");
    const all = [...client.events, ...again.events];
    assert.deepEqual(
      hseqs(all),
      Array.from({ length: all.length }, (_, i) => i + 1),
      "every event once, in order",
    );

    // Garbage after the hello: bad lines, unknown channels and types, a bogus request; the supervisor answers on.
    two.relay.raw("{oops\n");
    two.relay.raw('{"c":0,"t":"req","id":99,"op":"format-disk"}\n');
    two.relay.raw('{"c":0,"t":"req","op":"status"}\n');
    two.relay.raw('{"c":7,"t":"open","n":"shell"}\n{"c":12345,"t":"data","d":"AAAA"}\n{"c":9,"t":"zap"}\n');
    two.relay.raw(`${"z".repeat(3 * 1024 * 1024)}\n`);
    assert.deepEqual(await two.stream.request({ op: "status" }, signal()), {
      ok: true,
      harness: "running",
      hibernated: false,
      ended: false,
    });
    assert.equal(s.child.exitCode, null);
    assert.match(s.stderr(), /dropped a line: not JSON/);
    assert.match(s.stderr(), /closed a channel named "shell"/);
    assert.match(s.stderr(), /dropped a request without an id/);
  });
});
