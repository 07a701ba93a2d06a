import assert from "node:assert/strict";
import { test } from "node:test";
import { persistedFrame, storedFrame } from "../../src/http/sse/sse-frame.ts";
import type { LedgerEvent } from "../../src/ledger/ledger.ts";
import { storedEventHead, storedEventJson } from "../../src/ledger/stored-event.ts";

const stored = (e: LedgerEvent) => storedEventJson(e.runId, e.seq, e.type, e.agentId, e.at, JSON.stringify(e.data));
const event = (over: Partial<LedgerEvent>): LedgerEvent => ({
  runId: "r_1",
  seq: 7,
  type: "tool_end",
  agentId: "a_1",
  at: 1_700_000_000_000,
  data: {},
  ...over,
});

/** Events whose JSON has every shape the stored text can take, the odd ones included. */
const CASES: Array<[string, LedgerEvent]> = [
  [
    "a tool result",
    event({
      data: { hseq: 1, result: { content: [{ type: "text", text: 'line "q" \\ \n é 😀 \u2028 \ud800' }] } },
    }),
  ],
  ["empty data", event({ type: "turn_start" })],
  ["a run-level event", event({ type: "run_started", agentId: null, data: { runId: "r_1" } })],
  ["an agent id to escape", event({ agentId: 'a"1\\' })],
  ["own agentId, seq and at in data", event({ data: { requestId: "p_1", at: 2, seq: "s", agentId: "other" } })],
  ["one of them nested", event({ data: { outer: { seq: 1 } } })],
  ["their names inside strings", event({ data: { note: 'say "at": now', flat: 1, "x\\": "seq" } })],
  ["integer keys", event({ data: { b: 1, 2: 2, 1: 1 } })],
  ["an own __proto__ key", event({ data: JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown> })],
  ["a type with CR and LF", event({ type: "odd\r\ntype" })],
  ["a type that is only a newline", event({ type: "\n" })],
  ["a type with an escaped character", event({ type: 'q"t' })],
  ["a fractional and a huge at", event({ at: 1.5, seq: 1 })],
  ["an at beyond 1e21", event({ at: 1e21 })],
];

for (const [name, e] of CASES) {
  test(`a frame replayed from the stored text is byte for byte the live one: ${name}`, () => {
    const json = stored(e);
    // The live path's event is what the ledger parses from the same text.
    const live = JSON.parse(json) as LedgerEvent;
    assert.deepEqual(storedFrame(json), { seq: e.seq, frame: persistedFrame({ ...live }) });
  });
}

test("the frame on the wire: id, event and one data line with agentId, seq and at after the event's fields", () => {
  const e = event({ data: { stopReason: "stop" } });
  const expected = 'id: 7\nevent: tool_end\ndata: {"stopReason":"stop","agentId":"a_1","seq":7,"at":1700000000000}\n\n';
  assert.equal(persistedFrame(e), expected);
  assert.equal(storedFrame(stored(e)).frame, expected);
});

test("text not in the ledger's shape is parsed whole and gives the same frame", () => {
  const e = event({ data: { n: 1 } });
  const reordered = JSON.stringify({
    seq: e.seq,
    runId: e.runId,
    type: e.type,
    agentId: e.agentId,
    at: e.at,
    data: e.data,
  });
  assert.equal(storedEventHead(reordered), undefined);
  assert.deepEqual(storedFrame(reordered), { seq: 7, frame: persistedFrame(event({ data: { n: 1 } })) });
  assert.deepEqual(storedEventHead(stored(e)), {
    seq: 7,
    type: "tool_end",
    agentIdJson: '"a_1"',
    atJson: "1700000000000",
    dataJson: '{"n":1}',
  });
});
