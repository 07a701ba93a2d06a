import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HarnessEventMessage } from "../../src/harness/protocol.ts";
import { capEventData, MAX_EVENT_DATA_BYTES, parseHarnessLine } from "../../src/harness/wire-schemas.ts";

const event = (fields: Record<string, unknown>) =>
  JSON.stringify({ type: "event", hseq: 1, event: "text", at: 0, data: {}, ...fields });

describe("harness wire schemas: every line from a sandbox is checked, nothing throws", () => {
  it("accepts the messages a real harness sends", () => {
    const settled = parseHarnessLine(event({ event: "turn_settled", data: { outcome: "success", text: "hi" } }));
    assert.deepEqual(settled, {
      ok: true,
      message: { type: "event", hseq: 1, event: "turn_settled", at: 0, data: { outcome: "success", text: "hi" } },
    });
    assert.equal(
      parseHarnessLine(event({ event: "turn_settled", data: { outcome: "failed", text: null, error: "boom" } })).ok,
      true,
    );
    assert.equal(parseHarnessLine(event({ event: "tool_start", data: { toolName: "bash" } })).ok, true);
    assert.equal(
      parseHarnessLine(JSON.stringify({ type: "response", id: "1", command: "prompt", success: true })).ok,
      true,
    );
    const noTurn = {
      type: "response",
      id: "2",
      command: "steer",
      success: false,
      error: "no turn is running",
      code: "NO_TURN_RUNNING",
    };
    assert.equal(parseHarnessLine(JSON.stringify(noTurn)).ok, true);
    assert.equal(
      parseHarnessLine(JSON.stringify({ ...noTurn, code: "ANYTHING_ELSE" })).ok,
      false,
      "only the codes the daemon acts on pass",
    );
    assert.equal(
      parseHarnessLine(JSON.stringify({ type: "host_call", id: "c1", method: "spawn_agent", params: {} })).ok,
      true,
    );
  });

  it("drops the forged turn_settled that used to take the daemon down, and every other malformed shape", () => {
    const bad = [
      event({ event: "turn_settled", data: {} }),
      event({ event: "turn_settled", data: { outcome: "won", text: "x" } }),
      event({ event: "turn_settled", data: { outcome: "success", text: 5 } }),
      event({ event: "turn_settled", data: { outcome: "success" } }),
      event({ hseq: 0 }),
      event({ hseq: -3 }),
      event({ hseq: 1.5 }),
      event({ hseq: "7" }),
      event({ hseq: 2 ** 60 }),
      event({ event: "agent_ended" }),
      event({ event: "__proto__" }),
      event({ data: null }),
      event({ data: [1, 2] }),
      event({ at: "now" }),
      JSON.stringify({ type: "host_call", id: "x".repeat(129), method: "spawn_agent", params: {} }),
      JSON.stringify({ type: "host_call", id: "c", method: "rm_rf", params: {} }),
      JSON.stringify({ type: "host_call", id: "c", method: "await_result", params: "x" }),
      JSON.stringify({ type: "response", id: 5, command: "prompt", success: true }),
      JSON.stringify({ type: "response", command: "prompt" }),
      JSON.stringify({ type: "hello", after: 0 }),
      "not json",
      "null",
      "[1,2]",
      '"str"',
      "{".repeat(100_000),
      "[".repeat(1_000_000) + "]".repeat(1_000_000),
    ];
    for (const line of bad) {
      const parsed = parseHarnessLine(line);
      assert.equal(parsed.ok, false, line.slice(0, 80));
      if (!parsed.ok) assert.ok(parsed.reason.length < 300, "a reason never echoes the line");
    }
  });

  it("cuts long error texts instead of carrying them into logs and answers", () => {
    const parsed = parseHarnessLine(
      event({ event: "turn_settled", data: { outcome: "failed", text: null, error: "e".repeat(100_000) } }),
    );
    assert.ok(parsed.ok && parsed.message.type === "event");
    if (parsed.ok && parsed.message.type === "event") assert.ok(String(parsed.message.data.error).length < 5000);
  });

  it("caps an event's data before it reaches the ledger", () => {
    const small: HarnessEventMessage = { type: "event", hseq: 1, event: "tool_end", at: 0, data: { output: "ok" } };
    assert.equal(capEventData(small.data), small.data);
    const big: HarnessEventMessage = { ...small, data: { output: "y".repeat(MAX_EVENT_DATA_BYTES + 1) } };
    const capped = capEventData(big.data);
    assert.equal(capped.truncated, true);
    assert.ok(JSON.stringify(capped).length < 1000);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) {
      const next: Record<string, unknown> = {};
      deep.next = next;
      deep = next;
    }
    assert.equal(capEventData(root).truncated, true, "data too deep to serialize is replaced, not thrown");
  });
});
