import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LedgerEvent } from "../../src/ledger/ledger.ts";
import { MAX_OPEN_TOOLS, SpanFold, type SpanFoldOptions } from "../../src/tracing/span-fold.ts";
import type { SpanRecord } from "../../src/tracing/span-record.ts";
import { agentSpanId, runSpanId, toolSpanId, traceIdOf, turnSpanId } from "../../src/tracing/trace-ids.ts";

const RUN = "r_0001";
let seq = 0;
const ev = (type: string, agentId: string | null, data: Record<string, unknown>, at: number): LedgerEvent => ({
  runId: RUN,
  seq: ++seq,
  type,
  agentId,
  at,
  data,
});
const fold = (options: Partial<SpanFoldOptions> = {}) =>
  new SpanFold({
    captureContent: false,
    latestOnly: false,
    eventCount: 128,
    readResult: () => "the result",
    ...options,
  });
const spawned = (agentId: string, at: number, extra: Record<string, unknown> = {}) =>
  ev(
    "agent_spawned",
    agentId,
    {
      parentAgentId: null,
      runId: RUN,
      specName: "lead",
      depth: 0,
      spawnIndex: 0,
      sandboxId: null,
      waitFor: [],
      prompt: "do it",
      ...extra,
    },
    at,
  );
const usage = (agentId: string, callId: string, at: number) =>
  ev(
    "model_usage",
    agentId,
    {
      callId,
      provider: "anthropic",
      model: "claude-x",
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 100,
      cacheWriteTokens: 1,
      costUsd: 0.5,
      durationMs: 40,
      heldMs: 10,
      usageKnown: true,
    },
    at,
  );
/** Agent a1's `ls` through bash, 1210 to 1300. */
const bashCall = (isError: boolean, output: string) => [
  ev("tool_start", "a1", { hseq: 2, harnessAt: 0, toolCallId: "t1", toolName: "bash", args: { command: "ls" } }, 1210),
  ev("tool_end", "a1", { hseq: 3, harnessAt: 0, toolCallId: "t1", toolName: "bash", isError, output }, 1300),
];
const all = (f: SpanFold, events: LedgerEvent[]): SpanRecord[] => events.flatMap((e) => f.apply(e));

describe("spans folded from ledger events", () => {
  it("builds each span when it ends, with the ledger's times and ids derived from the ledger's ids", () => {
    const f = fold();
    const spans = all(f, [
      ev("run_started", null, { runId: RUN }, 1000),
      spawned("a1", 1000),
      ev("agent_start", "a1", { hseq: 1, harnessAt: 0 }, 1100),
      usage("a1", "c1", 1200),
      ...bashCall(true, "boom"),
      ev("handle_settled", "a1", { outcome: "success", resultRef: "fs://a1/result.md" }, 1400),
      ev("agent_ended", "a1", { outcome: "success", endedAt: 1500, error: null }, 1500),
    ]);
    assert.deepEqual(
      spans.map((s) => s.name),
      ["swarmd.run", "chat claude-x", "execute_tool bash", "invoke_agent lead", "create_agent lead"],
    );
    const [run, chat, tool, turn, agent] = spans as [SpanRecord, SpanRecord, SpanRecord, SpanRecord, SpanRecord];
    assert.ok(spans.every((s) => s.traceId === traceIdOf(RUN)));
    assert.equal(run.spanId, runSpanId(RUN));
    assert.equal(agent.parentSpanId, run.spanId);
    assert.equal(turn.spanId, turnSpanId("a1", 1));
    assert.equal(turn.parentSpanId, agentSpanId("a1"));
    assert.equal(chat.parentSpanId, turn.spanId);
    assert.equal(tool.parentSpanId, turn.spanId);
    assert.equal(tool.spanId, toolSpanId("a1", "t1"));
    assert.deepEqual(
      [chat.startAt, chat.endAt],
      [1150, 1200],
      "a model call starts when it reached the gateway (held + sent)",
    );
    assert.equal(chat.attributes["gen_ai.usage.input_tokens"], 111, "cached input counts as input");
    assert.equal(chat.attributes["gen_ai.usage.cache_read.input_tokens"], 100);
    assert.equal(chat.attributes["swarmd.held_ms"], 10);
    assert.equal(chat.attributes["gen_ai.system"], "anthropic", "the older name beside the latest by default");
    assert.deepEqual([tool.status.code, tool.attributes["error.type"]], ["error", "tool_error"]);
    assert.deepEqual([turn.startAt, turn.endAt], [1100, 1400]);
    assert.equal(turn.attributes["swarmd.cost_usd"], 0.5);
    assert.deepEqual([agent.startAt, agent.endAt, agent.status.code], [1000, 1500, "ok"]);
    assert.equal(agent.attributes["gen_ai.provider.name"], "anthropic");
    assert.equal(f.openAgents, 0, "nothing kept of an ended agent");
  });

  it("content stays off spans unless captured; with capture, prompts, results, tool arguments and outputs are on them", () => {
    const events = [
      spawned("a1", 1000),
      ev("agent_start", "a1", { hseq: 1, harnessAt: 0 }, 1100),
      ev("agent_steered", "a1", { message: "secret plan" }, 1150),
      ...bashCall(false, "files"),
      ev("handle_settled", "a1", { outcome: "success", resultRef: "x" }, 1400),
      ev("agent_ended", "a1", { outcome: "success", endedAt: 1500, error: null }, 1500),
    ];
    const plain = all(fold(), events);
    const text = JSON.stringify(plain);
    for (const secret of ["secret plan", "do it", "the result", "files", '\\"ls\\"'])
      assert.ok(!text.includes(secret), secret);
    const captured = all(fold({ captureContent: true }), events);
    const turn = captured.find((s) => s.name.startsWith("invoke_agent"))!;
    assert.match(String(turn.attributes["gen_ai.input.messages"]), /do it/);
    assert.match(String(turn.attributes["gen_ai.output.messages"]), /the result/);
    const tool = captured.find((s) => s.name.startsWith("execute_tool"))!;
    assert.equal(tool.attributes["gen_ai.tool.call.arguments"], '{"command":"ls"}');
    assert.equal(tool.attributes["gen_ai.tool.call.result"], "files");
    const agent = captured.at(-1)!;
    assert.equal(agent.events.find((e) => e.name === "agent_steered")?.attributes["swarmd.message"], "secret plan");
  });

  it("OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental drops gen_ai.system", () => {
    const spans = all(fold({ latestOnly: true }), [spawned("a1", 1000), usage("a1", "c1", 1200)]);
    assert.equal(spans[0]!.attributes["gen_ai.system"], undefined);
    assert.equal(spans[0]!.attributes["gen_ai.provider.name"], "anthropic");
  });

  it("a fold of the ledger so far, its output dropped (a restart), ends open spans later with their first start times", () => {
    const before = [spawned("a1", 1000), ev("agent_start", "a1", { hseq: 1, harnessAt: 0 }, 1100)];
    const restarted = fold();
    assert.deepEqual(all(restarted, before), []);
    const after = all(restarted, [
      ev("handle_settled", "a1", { outcome: "success", resultRef: null }, 5000),
      ev("agent_ended", "a1", { outcome: "lost", endedAt: 6000, error: "agent lost: gone" }, 6000),
    ]);
    assert.deepEqual(
      after.map((s) => [s.name, s.startAt, s.endAt, s.status.code]),
      [
        ["invoke_agent lead", 1100, 5000, "ok"],
        ["create_agent lead", 1000, 6000, "error"],
      ],
    );
    assert.equal(after[1]!.status.message, "agent lost: gone");
  });

  it("a child hangs under its parent; a fork child links to the point it was forked at", () => {
    const spans = all(fold(), [
      spawned("a1", 1000),
      spawned("a2", 1100, {
        parentAgentId: "a1",
        specName: "kid",
        forkedFrom: { agentId: "a1", forkPoint: { turn: 2 } },
      }),
      spawned("a3", 1100, {
        parentAgentId: "a1",
        specName: "kid",
        forkedFrom: { agentId: "a1", forkPoint: { turn: 1, toolCallId: "t9" } },
      }),
      ev("agent_ended", "a2", { outcome: "aborted", endedAt: 1, error: null }, 1200),
      ev("agent_ended", "a3", { outcome: "aborted", endedAt: 1, error: null }, 1200),
    ]);
    assert.equal(spans[0]!.parentSpanId, agentSpanId("a1"));
    assert.equal(spans[0]!.links[0]!.spanId, turnSpanId("a1", 2));
    assert.equal(spans[1]!.links[0]!.spanId, toolSpanId("a1", "t9"));
    assert.equal(spans[0]!.status.code, "ok", "a stop is not an error");
  });

  it("a hostile harness cannot grow the daemon: open tool calls and span events are bounded", () => {
    const f = fold({ eventCount: 8 });
    f.apply(spawned("a1", 1000));
    for (let i = 0; i < MAX_OPEN_TOOLS * 4; i++) {
      f.apply(
        ev("tool_start", "a1", { hseq: i, harnessAt: 0, toolCallId: `t${i}`, toolName: "x".repeat(10_000) }, 1001),
      );
      f.apply(ev("compaction_start", "a1", { hseq: i, harnessAt: 0, reason: "r" }, 1001));
    }
    const spans = f.apply(ev("agent_ended", "a1", { outcome: "failed", endedAt: 2, error: "x" }, 2000));
    const tools = spans.filter((s) => s.name.startsWith("execute_tool"));
    assert.equal(tools.length, MAX_OPEN_TOOLS, "tool calls beyond the bound are not tracked");
    assert.ok(
      tools.every((s) => s.name.length <= "execute_tool ".length + 64),
      "names are clipped",
    );
    const agent = spans.at(-1)!;
    assert.equal(agent.events.length, 8);
    assert.equal(agent.droppedEvents, MAX_OPEN_TOOLS * 4 - 8);
  });
});
