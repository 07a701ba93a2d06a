import { SwarmError } from "../errors.ts";

/** The samplers OTEL_TRACES_SAMPLER names (the OpenTelemetry SDK environment specification). */
export type SamplerName =
  | "always_on"
  | "always_off"
  | "traceidratio"
  | "parentbased_always_on"
  | "parentbased_always_off"
  | "parentbased_traceidratio";

const SAMPLERS: readonly SamplerName[] = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

/** The one OTLP protocol swarmd exports with. */
export const TRACE_PROTOCOL = "http/protobuf";

/** Longest attribute value by default (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT overrides): captured text stays bounded. */
export const DEFAULT_ATTRIBUTE_VALUE_LENGTH = 64 * 1024;

/** What tracing does, from the standard OTEL_* variables; `null` from `loadTraceConfig` when it is off. */
export interface TraceConfig {
  sampler: SamplerName;
  /** OTEL_TRACES_SAMPLER_ARG of a ratio sampler: the share of runs traced, 0 to 1. */
  ratio: number;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, outputs, tool arguments and results on spans. */
  captureContent: boolean;
  /** OTEL_SEMCONV_STABILITY_OPT_IN has `gen_ai_latest_experimental`: only the latest GenAI names (no `gen_ai.system`). */
  latestOnly: boolean;
  /** Span limits (OTEL_SPAN_* and OTEL_ATTRIBUTE_* variables). */
  attributeValueLength: number;
  attributeCount: number;
  eventCount: number;
  linkCount: number;
  /** The batch span processor's (OTEL_BSP_* variables). */
  batch: {
    scheduledDelayMillis: number;
    maxQueueSize: number;
    maxExportBatchSize: number;
    exportTimeoutMillis: number;
  };
}

const invalid = (message: string) => new SwarmError("CONFIG_INVALID", `invalid configuration: ${message}`);

/**
 * Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set and
 * OTEL_SDK_DISABLED is not `true`. The exporter itself reads the endpoint, headers, timeout and
 * compression variables; this reads the rest, and refuses what swarmd cannot honour (another
 * protocol, an unknown sampler) with `CONFIG_INVALID` naming the variable, at start.
 */
export function loadTraceConfig(env: NodeJS.ProcessEnv): TraceConfig | null {
  const get = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  if (bool(get, "OTEL_SDK_DISABLED")) return null;
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = get(name);
    if (protocol !== undefined && protocol !== TRACE_PROTOCOL) {
      throw invalid(
        `${name}=${protocol}: swarmd exports traces over OTLP ${TRACE_PROTOCOL} only; set it to ${TRACE_PROTOCOL} or unset it`,
      );
    }
  }
  const sampler = (get("OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(sampler)) {
    throw invalid(`OTEL_TRACES_SAMPLER=${sampler}: must be one of ${SAMPLERS.join(", ")}`);
  }
  const ratioText = get("OTEL_TRACES_SAMPLER_ARG");
  const ratio = ratioText === undefined ? 1 : Number(ratioText);
  if (sampler.endsWith("traceidratio") && !(ratio >= 0 && ratio <= 1)) {
    throw invalid(`OTEL_TRACES_SAMPLER_ARG=${ratioText}: a ratio sampler takes a number from 0 to 1`);
  }
  const captureContent = bool(get, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT");
  const optIn = (get("OTEL_SEMCONV_STABILITY_OPT_IN") ?? "").split(",").map((s) => s.trim());
  const config: TraceConfig = {
    sampler: sampler as SamplerName,
    ratio,
    captureContent,
    latestOnly: optIn.includes("gen_ai_latest_experimental"),
    attributeValueLength:
      count(get, "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT") ??
      count(get, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT") ??
      DEFAULT_ATTRIBUTE_VALUE_LENGTH,
    attributeCount: count(get, "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT") ?? count(get, "OTEL_ATTRIBUTE_COUNT_LIMIT") ?? 128,
    eventCount: count(get, "OTEL_SPAN_EVENT_COUNT_LIMIT") ?? 128,
    linkCount: count(get, "OTEL_SPAN_LINK_COUNT_LIMIT") ?? 128,
    batch: {
      scheduledDelayMillis: count(get, "OTEL_BSP_SCHEDULE_DELAY") ?? 5000,
      maxQueueSize: count(get, "OTEL_BSP_MAX_QUEUE_SIZE") ?? 2048,
      maxExportBatchSize: count(get, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE") ?? 512,
      exportTimeoutMillis: count(get, "OTEL_BSP_EXPORT_TIMEOUT") ?? 30_000,
    },
  };
  if (config.batch.maxExportBatchSize > config.batch.maxQueueSize) {
    throw invalid("OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not be more than OTEL_BSP_MAX_QUEUE_SIZE");
  }
  const endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ?? get("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (endpoint === undefined) return null;
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]) {
    const value = get(name);
    if (value !== undefined && !URL.canParse(value)) throw invalid(`${name}=${value}: not a URL`);
  }
  return config;
}

/** `true`/`false` (any case), as the OpenTelemetry environment specification reads booleans; anything else is refused. */
function bool(get: (name: string) => string | undefined, name: string): boolean {
  const value = get(name)?.toLowerCase();
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  throw invalid(`${name}=${get(name)}: must be true or false`);
}

/** A whole number of at least 0, or undefined when unset. */
function count(get: (name: string) => string | undefined, name: string): number | undefined {
  const value = get(name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw invalid(`${name}=${value}: must be a whole number of at least 0`);
  return n;
}
