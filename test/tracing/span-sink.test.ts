import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ExportResultCode } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";
import type { SpanRecord } from "../../src/tracing/span-record.ts";
import { createOtlpSink } from "../../src/tracing/span-sink.ts";
import { loadTraceConfig } from "../../src/tracing/trace-config.ts";
import { agentSpanId, runSpanId, traceIdOf } from "../../src/tracing/trace-ids.ts";

const quiet = { warn: () => undefined };
const config = (env: Record<string, string> = {}) =>
  loadTraceConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_BSP_SCHEDULE_DELAY: "10", ...env })!;
const span = (runId: string, extra: Partial<SpanRecord> = {}): SpanRecord => ({
  name: "create_agent lead",
  kind: "client",
  traceId: traceIdOf(runId),
  spanId: agentSpanId(`a_${runId}`),
  parentSpanId: runSpanId(runId),
  startAt: 1_700_000_000_000,
  endAt: 1_700_000_001_500,
  attributes: { "gen_ai.agent.name": "lead" },
  events: [],
  droppedEvents: 0,
  links: [],
  status: { code: "error", message: "the agent ended failed" },
  ...extra,
});

async function export_(env: Record<string, string>, records: SpanRecord[]) {
  // What the processor hands its exporter (the SDK's in-memory one forgets it at shutdown).
  const got: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (spans, done) => {
      got.push(...spans);
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: async () => undefined,
  };
  const sink = createOtlpSink(config(env), quiet, exporter);
  for (const record of records) sink.emit(record);
  await sink.close();
  return got;
}

describe("the span sink (the SDK's batch processor and exporter)", () => {
  it("hands the exporter a span with the ledger's ids, times, parent, status and the resource", async () => {
    // The resource's variables are read from the process's environment, as the SDK's detector does.
    Object.assign(process.env, {
      OTEL_SERVICE_NAME: "tracer-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci",
    });
    const [exported] = await export_({}, [span("r1")]).finally(() => {
      delete process.env.OTEL_SERVICE_NAME;
      delete process.env.OTEL_RESOURCE_ATTRIBUTES;
    });
    assert.ok(exported);
    assert.equal(exported.spanContext().traceId, traceIdOf("r1"));
    assert.equal(exported.spanContext().spanId, agentSpanId("a_r1"));
    assert.equal(exported.parentSpanContext?.spanId, runSpanId("r1"));
    assert.deepEqual(exported.startTime, [1_700_000_000, 0]);
    assert.deepEqual(exported.duration, [1, 500_000_000]);
    assert.deepEqual(exported.status, { code: 2, message: "the agent ended failed" });
    assert.equal(exported.resource.attributes["service.name"], "tracer-test");
    assert.equal(exported.resource.attributes["deployment.environment"], "ci");
    assert.equal(exported.instrumentationScope.name, "swarmd");
  });

  it("applies the span limits: values cut to length, attributes and events capped and counted", async () => {
    const [exported] = await export_(
      {
        OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: "8",
        OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: "2",
        OTEL_SPAN_EVENT_COUNT_LIMIT: "3",
      },
      [
        span("r1", {
          attributes: { a: "0123456789", b: 1, c: true },
          events: Array.from({ length: 5 }, (_, i) => ({ name: `e${i}`, at: 1_700_000_000_000 + i, attributes: {} })),
        }),
      ],
    );
    assert.deepEqual(exported!.attributes, { a: "01234567", b: 1 });
    assert.equal(exported!.droppedAttributesCount, 1);
    assert.deepEqual(
      exported!.events.map((e) => e.name),
      ["e2", "e3", "e4"],
    );
    assert.equal(exported!.droppedEventsCount, 2);
  });

  it("samples whole runs: always_off exports nothing; a ratio keeps or drops every span of a run together", async () => {
    assert.deepEqual(await export_({ OTEL_TRACES_SAMPLER: "always_off" }, [span("r1")]), []);
    const runs = Array.from({ length: 200 }, (_, i) => `r_${i}`);
    const records = runs.flatMap((runId) => [
      span(runId),
      span(runId, { spanId: runSpanId(runId), parentSpanId: undefined }),
    ]);
    const kept = await export_(
      { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" },
      records,
    );
    const perTrace = new Map<string, number>();
    for (const s of kept) perTrace.set(s.spanContext().traceId, (perTrace.get(s.spanContext().traceId) ?? 0) + 1);
    assert.ok(
      [...perTrace.values()].every((n) => n === 2),
      "both spans of a sampled run, never one",
    );
    assert.ok(perTrace.size > 50 && perTrace.size < 150, `about half the runs: ${perTrace.size}`);
    const again = await export_({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" }, records);
    assert.deepEqual(
      new Set(again.map((s) => s.spanContext().traceId)),
      new Set(perTrace.keys()),
      "the same runs on every start: the decision rests on the run's trace id",
    );
  });
});
