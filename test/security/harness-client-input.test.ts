import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { attachHarnessClient, HARNESS_READ_LIMITS } from "../../src/harness/client.ts";
import type { HarnessEventMessage, HostCallMessage } from "../../src/harness/protocol.ts";

const dir = mkdtempSync(join(tmpdir(), "swarmd-client-input-"));
let n = 0;

/** A forged harness: a server whose first connection is handed to `attack`, and the client attached to it. */
async function forged(after: number, attack: (socket: Socket) => void) {
  const path = join(dir, `h${n++}.sock`);
  const server: Server = createServer((socket) => {
    socket.once("data", () => attack(socket)); // after the client's hello
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const socket = connect(path);
  await new Promise((resolve) => socket.once("connect", resolve));
  const events: HarnessEventMessage[] = [];
  const calls: HostCallMessage[] = [];
  const logs: string[] = [];
  const client = attachHarnessClient(socket, after, {
    onEvent: (e) => events.push(e),
    onHostCall: (c) => calls.push(c),
    log: (m) => logs.push(m),
  });
  return {
    events,
    calls,
    logs,
    client,
    close: () => {
      client.close();
      server.close();
    },
  };
}

const line = (o: unknown) => `${JSON.stringify(o)}\n`;
const ev = (hseq: number, event = "text", data: Record<string, unknown> = { delta: "x" }) =>
  line({ type: "event", hseq, event, at: 0, data });
const until = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("the harness client treats a harness as hostile", () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("drops forged and malformed lines (logged a few times, not per line) and keeps the good ones", async () => {
    const h = await forged(10, (s) => {
      s.write(ev(11, "turn_settled", {})); // the line that used to exit the daemon
      s.write("not json\n{}\nnull\n[1]\n");
      s.write(line({ type: "host_call", id: "x".repeat(500), method: "spawn_agent", params: {} }));
      s.write(line({ type: "host_call", id: "ok", method: "await_result", params: { agentId: "a" } }));
      s.write(`${"z".repeat(10 * 1024 * 1024)}\n`); // a 10 MiB line
      for (let i = 0; i < 1000; i++) s.write("garbage\n");
      s.write(ev(5)); // at or below `after`: already seen
      s.write(ev(10 + 1_000_000)); // absurd jump
      s.write(ev(12, "turn_settled", { outcome: "success", text: "real" }));
      s.write(ev(13));
    });
    try {
      await until(() => h.events.length === 2);
      assert.deepEqual(
        h.events.map((e) => [e.hseq, e.event]),
        [
          [12, "turn_settled"],
          [13, "text"],
        ],
      );
      assert.deepEqual(
        h.calls.map((c) => c.id),
        ["ok"],
      );
      assert.ok(h.logs.length >= 1 && h.logs.length <= 5, `logged once per burst, not per line: ${h.logs.length}`);
      assert.ok(
        h.logs.every((m) => m.length < 500),
        "logs never echo the lines",
      );
      assert.equal(h.client.closed, false, "the connection stays usable");
    } finally {
      h.close();
    }
  });

  it("a throwing handler is caught and logged", async () => {
    const path = join(dir, "throw.sock");
    const server = createServer((s) => s.once("data", () => s.write(ev(1) + ev(2))));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    const socket = connect(path);
    const seen: number[] = [];
    const logs: string[] = [];
    const client = attachHarnessClient(socket, 0, {
      onEvent: (e) => {
        seen.push(e.hseq);
        throw new Error("handler bug");
      },
      log: (m) => logs.push(m),
    });
    try {
      await until(() => seen.length === 2);
      assert.match(logs[0] ?? "", /handler bug/);
    } finally {
      client.close();
      server.close();
    }
  });

  it("slows a flood down to the read limit without losing events", async () => {
    const total = HARNESS_READ_LIMITS.lines.burst + HARNESS_READ_LIMITS.lines.perSecond * 2;
    const h = await forged(0, (s) => {
      const lines: string[] = [];
      for (let i = 1; i <= total; i++) lines.push(ev(i));
      s.write(lines.join(""));
    });
    try {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(h.events.length < total, `throttled: ${h.events.length} of ${total} after 0.5 s`);
      await until(() => h.events.length === total, 20_000);
      assert.ok(Date.now() - start >= 1_000, "the excess waited for the bucket");
      assert.deepEqual(h.events.map((e) => e.hseq).slice(-3), [total - 2, total - 1, total]);
      assert.ok(h.logs.filter((m) => /faster than/.test(m)).length <= 2, "throttling is logged once per burst");
    } finally {
      h.close();
    }
  });
});
