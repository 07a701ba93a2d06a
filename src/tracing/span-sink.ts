import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Attributes,
  type DiagLogger,
  DiagLogLevel,
  diag,
  ROOT_CONTEXT,
  SamplingDecision,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
} from "@opentelemetry/api";
import { millisToHrTime } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace";
import type { AttributeValue, SpanRecord } from "./span-record.ts";
import type { TraceConfig } from "./trace-config.ts";

/** Where finished spans go. */
export interface SpanSink {
  emit(span: SpanRecord): void;
  /** Export what is queued (a clean shutdown), then stop; never rejects. */
  close(): Promise<void>;
}

/**
 * The OpenTelemetry JS SDK as swarmd uses it: a batch span processor and the OTLP/HTTP protobuf
 * exporter (which reads OTEL_EXPORTER_OTLP_* itself), the configured sampler and resource. Spans
 * are finished when swarmd learns of them, with ids and times from the ledger, so each is handed
 * to the processor as the SDK's `ReadableSpan` directly rather than started and ended through a
 * `Tracer`: the tracer's per-attribute validation (a WeakSet per value in @opentelemetry/core)
 * was a third of the tracer's time in bench/tracing.ts. Attributes are swarmd's own scalars; the
 * span limits are applied here as the SDK applies them (values cut to length, counts capped).
 */
export function createOtlpSink(
  config: TraceConfig,
  log: { warn(message: string): void },
  exporter: SpanExporter = new OTLPTraceExporter(),
): SpanSink {
  diag.setLogger(throttled(log), DiagLogLevel.WARN);
  const root = rootSampler(config);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "swarmd", "service.version": version() }))
    .merge(detectResources({ detectors: [envDetector] }));
  const scope = { name: "swarmd", version: version() };
  const processor = new BatchSpanProcessor({ exporter, ...config.batch });
  const limit = (attributes: Record<string, AttributeValue>): { attributes: Attributes; dropped: number } => {
    const out: Attributes = {};
    let count = 0;
    let dropped = 0;
    for (const key in attributes) {
      if (count >= config.attributeCount) {
        dropped++;
        continue;
      }
      const value = attributes[key]!;
      out[key] =
        typeof value === "string" && value.length > config.attributeValueLength
          ? value.slice(0, config.attributeValueLength)
          : value;
      count++;
    }
    return { attributes: out, dropped };
  };
  return {
    emit(record) {
      // The trace's sampling decision, the same for every span of a run (and after a restart).
      const decision = root.shouldSample(
        ROOT_CONTEXT,
        record.traceId,
        "swarmd.run",
        SpanKind.INTERNAL,
        {},
        [],
      ).decision;
      if (decision !== SamplingDecision.RECORD_AND_SAMPLED) return;
      const { attributes, dropped } = limit(
        record.droppedEvents > 0
          ? { ...record.attributes, "swarmd.dropped_events": record.droppedEvents }
          : record.attributes,
      );
      const context: SpanContext = { traceId: record.traceId, spanId: record.spanId, traceFlags: TraceFlags.SAMPLED };
      const endAt = Math.max(record.endAt, record.startAt);
      const events = record.events.slice(-config.eventCount);
      const links = record.links.slice(0, config.linkCount);
      const span: ReadableSpan = {
        name: record.name,
        kind: record.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
        spanContext: () => context,
        ...(record.parentSpanId === undefined
          ? {}
          : {
              parentSpanContext: {
                traceId: record.traceId,
                spanId: record.parentSpanId,
                traceFlags: TraceFlags.SAMPLED,
              },
            }),
        startTime: millisToHrTime(record.startAt),
        endTime: millisToHrTime(endAt),
        duration: millisToHrTime(endAt - record.startAt),
        status:
          record.status.code === "ok"
            ? { code: SpanStatusCode.OK }
            : record.status.code === "error"
              ? { code: SpanStatusCode.ERROR, ...(record.status.message ? { message: record.status.message } : {}) }
              : { code: SpanStatusCode.UNSET },
        attributes,
        links: links.map((link) => ({
          context: { traceId: link.traceId, spanId: link.spanId, traceFlags: TraceFlags.SAMPLED },
          attributes: limit(link.attributes).attributes,
        })),
        events: events.map((event) => ({
          name: event.name,
          time: millisToHrTime(event.at),
          attributes: limit(event.attributes).attributes,
        })),
        ended: true,
        resource,
        instrumentationScope: scope,
        droppedAttributesCount: dropped,
        droppedEventsCount: record.events.length - events.length,
        droppedLinksCount: record.links.length - links.length,
      };
      processor.onEnd(span);
    },
    async close() {
      await processor.shutdown().catch((err: unknown) => log.warn(`traces: the last export failed: ${String(err)}`));
      diag.disable();
    },
  };
}

function rootSampler(config: TraceConfig): Sampler {
  if (config.sampler.endsWith("always_off")) return new AlwaysOffSampler();
  if (config.sampler.endsWith("traceidratio")) return new TraceIdRatioBasedSampler(config.ratio);
  return new AlwaysOnSampler();
}

let cachedVersion: string | undefined;
function version(): string {
  cachedVersion ??= (
    JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../../package.json"), "utf8")) as {
      version: string;
    }
  ).version;
  return cachedVersion;
}

/** The SDK's warnings (a collector that does not answer, say) in the daemon's log, at most one a minute. */
function throttled(log: { warn(message: string): void }): DiagLogger {
  let last = 0;
  let skipped = 0;
  const warn = (message: string, ...args: unknown[]) => {
    const now = Date.now();
    if (now - last < 60_000) {
      skipped += 1;
      return;
    }
    const more = skipped > 0 ? ` (${skipped} more since the last)` : "";
    last = now;
    skipped = 0;
    log.warn(`traces: ${message}${args.length > 0 ? ` ${args.map(String).join(" ")}` : ""}${more}`);
  };
  const quiet = () => undefined;
  return { error: warn, warn, info: quiet, debug: quiet, verbose: quiet };
}
