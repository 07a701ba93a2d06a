import assert from "node:assert/strict";
import { once } from "node:events";
import { type Duplex, PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { type Frame, frameLine, MUX_LIMITS } from "../../src/harness/mux/frames.ts";
import { createMux, type Mux, type MuxChannel } from "../../src/harness/mux/mux.ts";
import { openSandboxStream } from "../../src/sandbox/stream/sandbox-stream.ts";
import { createWaitList } from "../support/wait-list.ts";

/** Every line that crossed one direction of a wire. */
function tap(stream: PassThrough): string[] {
  const lines: string[] = [];
  let rest = "";
  stream.on("data", (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split("\n");
    rest = parts.pop()!;
    lines.push(...parts.filter((l) => l.length > 0));
  });
  return lines;
}

/** Two muxes joined by two pipes; `aToB` / `bToA` are the lines each sent. */
function wire() {
  const toB = new PassThrough();
  const toA = new PassThrough();
  const opened: MuxChannel[] = [];
  const logs: string[] = [];
  const waits = createWaitList();
  const aToB = tap(toB);
  const bToA = tap(toA);
  const side = (input: PassThrough, output: PassThrough, firstId: 1 | 2): Mux =>
    createMux({
      input,
      output,
      firstId,
      live: true,
      log: (m) => logs.push(m),
      onOpen: (_name, channel) => {
        opened.push(channel);
        waits.wake();
      },
      onControl: () => undefined,
      onEnd: () => undefined,
    });
  const a = side(toA, toB, 1);
  const b = side(toB, toA, 2);
  const accepted = () =>
    waits.until(
      () => opened[0],
      5_000,
      () => "no channel was opened",
    );
  return { a, b, aToB, bToA, logs, accepted };
}

async function readAll(stream: Duplex): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("stream mux", () => {
  it("carries a channel's bytes both ways in data frames of at most 64 KiB, and its end", async () => {
    const { a, aToB, accepted } = wire();
    const near = a.open("harness");
    const far = await accepted();
    assert.equal(far.name, "harness");
    const payload = Buffer.alloc(300 * 1024, 7);
    const received = readAll(far);
    const back = readAll(near);
    far.write("answer");
    near.end(payload);
    assert.deepEqual(await received, payload);
    // Not half-open, as a socket: the end read ends the far side's writing too.
    assert.equal((await back).toString(), "answer");
    const frames = aToB.map((line) => JSON.parse(line) as Frame);
    const data = frames.filter((f) => f.t === "data") as { d: string }[];
    assert.ok(data.length >= 5, `${data.length} data frames`);
    for (const f of data) assert.ok(Buffer.from(f.d, "base64").length <= MUX_LIMITS.chunkBytes);
    assert.deepEqual(frames.at(-1), { c: near.id, t: "end" });
  });

  it("a reader that does not read stops its sender at one window; reading lets the rest through", async () => {
    const { a, aToB, accepted } = wire();
    const near = a.open("model");
    const far = await accepted();
    far.pause();
    const payload = Buffer.alloc(1024 * 1024, 1);
    let finished = false;
    near.end(payload, () => (finished = true));
    // Turns of the event loop enough for a runaway sender to run away: the pipes here cross in one.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    const sent = aToB
      .map((l) => JSON.parse(l) as Frame)
      .filter((f) => f.t === "data")
      .reduce((n, f) => n + Buffer.from((f as { d: string }).d, "base64").length, 0);
    assert.equal(sent, MUX_LIMITS.window);
    assert.equal(far.readableLength, MUX_LIMITS.window);
    assert.equal(finished, false);
    assert.deepEqual(await readAll(far), payload);
  });

  it("closes a channel whose peer sends past its window, and keeps the others", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const sent = tap(output);
    const logs: string[] = [];
    const channels: MuxChannel[] = [];
    createMux({
      input,
      output,
      firstId: 1,
      live: true,
      log: (m) => logs.push(m),
      onOpen: (_n, c) => {
        c.pause();
        channels.push(c);
      },
      onControl: () => undefined,
      onEnd: () => undefined,
    });
    const chunk = Buffer.alloc(MUX_LIMITS.chunkBytes).toString("base64");
    input.write(frameLine({ c: 2, t: "open", n: "model" }));
    input.write(frameLine({ c: 4, t: "open", n: "model" }));
    for (let i = 0; i < 3; i++) input.write(frameLine({ c: 2, t: "data", d: chunk }));
    input.write(frameLine({ c: 4, t: "data", d: Buffer.from("fine").toString("base64") }));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(channels[0]!.destroyed, true);
    assert.equal(channels[0]!.readableLength <= MUX_LIMITS.window, true);
    assert.ok(sent.includes(JSON.stringify({ c: 2, t: "close" })), sent.join("\n"));
    assert.match(logs.join("\n"), /channel 2 \(model\) closed: the peer sent past its window/);
    assert.equal(channels[1]!.destroyed, false);
    assert.equal(channels[1]!.read()?.toString(), "fine");
  });

  it("drops a line over 1 MiB and garbage, logs them, and goes on with the next frame", async () => {
    const input = new PassThrough();
    const seen: string[] = [];
    const problems: string[] = [];
    createMux({
      input,
      output: new PassThrough(),
      firstId: 1,
      live: true,
      log: (m) => problems.push(m),
      onOpen: (n) => seen.push(`open ${n}`),
      onControl: (f) => seen.push(`control ${f.t}`),
      onEnd: () => seen.push("end"),
    });
    input.write(`{"c":0,"t":"x","pad":"${"y".repeat(MUX_LIMITS.maxLineBytes)}"}\n`);
    input.write("not json at all\n");
    input.write(`${frameLine({ c: 2, t: "open", n: "model" })}`);
    input.write(`${frameLine({ c: 0, t: "ping" })}`);
    input.end();
    await once(input, "end");
    assert.deepEqual(seen, ["open model", "control ping", "end"]);
    assert.match(problems[0]!, /dropped a line of \d+ bytes \(the limit is 1048576\)/);
  });

  it("stops reading a peer that floods it while not reading what it answers", async () => {
    // Opens past the channel limit: each is refused, and every refusal is a line written back.
    const input2 = new PassThrough();
    const output2 = new PassThrough({ highWaterMark: 1024 });
    createMux({
      input: input2,
      output: output2,
      firstId: 1,
      live: true,
      log: () => undefined,
      onOpen: (_n, c) => c.pause(),
      onControl: () => undefined,
      onEnd: () => undefined,
    });
    let id = 2;
    let lines = 0;
    while (!input2.isPaused() && lines < 2_000_000) {
      let batch = "";
      for (let i = 0; i < 1000; i++, id += 2) batch += frameLine({ c: id, t: "open", n: "model" });
      input2.write(batch);
      lines += 1000;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(input2.isPaused(), true, `still reading after ${lines} opens`);
    const cap = MUX_LIMITS.maxChannels * MUX_LIMITS.window + 4 * MUX_LIMITS.maxLineBytes;
    assert.ok(output2.writableLength <= cap + MUX_LIMITS.maxLineBytes, `${output2.writableLength} bytes held`);
    // Reading what it wrote lets it read again.
    output2.resume();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(input2.isPaused(), false);
  });

  it("reset closes every channel without a frame to the peer", async () => {
    const { a, aToB, accepted } = wire();
    const near = a.open("harness");
    await accepted();
    const before = aToB.length;
    a.reset();
    await once(near, "close");
    assert.equal(aToB.length, before);
  });
});

describe("SandboxStream's hello", () => {
  it("drops what comes before the answer to its own hello (a stale attach's frames, a cut line), then speaks", async () => {
    const toSupervisor = new PassThrough();
    const fromSupervisor = new PassThrough();
    const asked = tap(toSupervisor);
    const models: Duplex[] = [];
    const logs: string[] = [];
    const stream = openSandboxStream(
      { input: toSupervisor, output: fromSupervisor },
      { model: (c) => models.push(c), log: (m) => logs.push(m) },
    );
    await new Promise((resolve) => setImmediate(resolve));
    const hello = JSON.parse(asked[0]!) as { t: string; nonce: string };
    assert.equal(hello.t, "hello");
    // The attach began mid-line; then frames of the attach before, a hello of another attach, and the answer.
    fromSupervisor.write('a":"cut off mid-line"}\n');
    fromSupervisor.write(frameLine({ c: 2, t: "open", n: "model" }));
    fromSupervisor.write(frameLine({ c: 0, t: "res", id: 1, ok: true }));
    fromSupervisor.write(frameLine({ c: 0, t: "hello", nonce: "someone-else" }));
    let ready = false;
    void stream.ready.then(() => (ready = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ready, false);
    fromSupervisor.write(`\n${frameLine({ c: 0, t: "hello", nonce: hello.nonce })}`);
    await stream.ready;
    assert.equal(models.length, 0);
    assert.deepEqual(logs, []);

    const answer = stream.request({ op: "status" }, AbortSignal.timeout(5_000));
    await new Promise((resolve) => setImmediate(resolve));
    const request = JSON.parse(asked.at(-1)!) as { id: number; op: string };
    assert.equal(request.op, "status");
    fromSupervisor.write(frameLine({ c: 0, t: "res", id: request.id, ok: true, harness: "stopped", hibernated: true }));
    assert.deepEqual(await answer, { ok: true, harness: "stopped", hibernated: true });
    const refused = stream.request({ op: "start" }, AbortSignal.timeout(5_000));
    await new Promise((resolve) => setImmediate(resolve));
    fromSupervisor.write(frameLine({ c: 0, t: "res", id: request.id + 1, ok: false, error: "no" }));
    assert.deepEqual(await refused, { ok: false, error: "no" }, "an answer with an error field is an answer");

    fromSupervisor.write(frameLine({ c: 2, t: "open", n: "model" }));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(models.length, 1);

    const pending = stream.request({ op: "start" }, AbortSignal.timeout(5_000));
    fromSupervisor.end();
    await assert.rejects(pending, { code: "HARNESS_UNREACHABLE" });
    assert.match((await stream.ended).message, /ended/);
    assert.equal(models[0]!.destroyed, true);
  });

  it("sends a request too long for a line as a request channel's content", async () => {
    const toSupervisor = new PassThrough();
    const fromSupervisor = new PassThrough();
    const asked = tap(toSupervisor);
    const stream = openSandboxStream({ input: toSupervisor, output: fromSupervisor }, { model: () => undefined });
    const big = "x".repeat(2 * MUX_LIMITS.maxLineBytes);
    void stream.request({ op: "inputs", files: { "a.md": big } }, AbortSignal.timeout(5_000)).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    const frames = asked.map((l) => JSON.parse(l) as Record<string, unknown>);
    const open = frames.find((f) => f.t === "open");
    assert.deepEqual(open, { c: 1, t: "open", n: "request" });
    assert.deepEqual(frames.at(-1), { t: "req", id: 1, op: "inputs", body: 1, c: 0 });
    for (const line of asked) assert.ok(line.length < MUX_LIMITS.maxLineBytes);
    stream.close();
  });
});
