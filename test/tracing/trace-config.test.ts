import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { isSwarmError } from "../../src/errors.ts";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { loadTraceConfig } from "../../src/tracing/trace-config.ts";

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
const refused = (env: NodeJS.ProcessEnv, name: RegExp) =>
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => isSwarmError(err, "CONFIG_INVALID") && name.test(err.message),
  );

describe("trace configuration from the OTEL_* variables", () => {
  it("is off without an endpoint, or with OTEL_SDK_DISABLED=true", () => {
    assert.equal(loadConfig({}).tracing, null);
    assert.equal(loadTraceConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: "true" }), null);
    assert.equal(loadTraceConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: "TRUE" }), null);
    assert.notEqual(loadTraceConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" }), null);
  });

  it("defaults: parent-based always-on sampling, no content, both GenAI attribute generations, bounded values", () => {
    const config = loadTraceConfig(ENDPOINT)!;
    assert.equal(config.sampler, "parentbased_always_on");
    assert.equal(config.captureContent, false);
    assert.equal(config.latestOnly, false);
    assert.equal(config.attributeValueLength, 64 * 1024);
    assert.deepEqual(config.batch, {
      scheduledDelayMillis: 5000,
      maxQueueSize: 2048,
      maxExportBatchSize: 512,
      exportTimeoutMillis: 30_000,
    });
  });

  it("reads the sampler, content capture, the semconv opt-in, span limits and batch settings", () => {
    const config = loadTraceConfig({
      ...ENDPOINT,
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      OTEL_SEMCONV_STABILITY_OPT_IN: "http, gen_ai_latest_experimental",
      OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: "4096",
      OTEL_SPAN_EVENT_COUNT_LIMIT: "16",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    })!;
    assert.equal(config.sampler, "traceidratio");
    assert.equal(config.ratio, 0.25);
    assert.equal(config.captureContent, true);
    assert.equal(config.latestOnly, true);
    assert.equal(config.attributeValueLength, 4096);
    assert.equal(config.eventCount, 16);
    assert.equal(config.batch.scheduledDelayMillis, 100);
  });

  it("refuses, naming the variable, what swarmd cannot honour", () => {
    refused({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc.*http\/protobuf/);
    refused(
      { ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" },
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http\/json/,
    );
    // A protocol swarmd cannot speak is refused even before an endpoint is set: it was meant for swarmd.
    refused({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /OTEL_EXPORTER_OTLP_PROTOCOL/);
    refused({ ...ENDPOINT, OTEL_TRACES_SAMPLER: "jaeger_remote" }, /OTEL_TRACES_SAMPLER=jaeger_remote/);
    refused(
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" },
      /OTEL_TRACES_SAMPLER_ARG=2/,
    );
    refused({ ...ENDPOINT, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" }, /CAPTURE_MESSAGE_CONTENT=yes/);
    refused({ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: "-1" }, /OTEL_BSP_MAX_QUEUE_SIZE/);
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, /OTEL_EXPORTER_OTLP_ENDPOINT=not a url/);
    assert.equal(
      loadTraceConfig({ OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
      null,
      "off is off",
    );
  });

  it("the daemon stops at start with CONFIG_INVALID naming the protocol", () => {
    const started = spawnSync(process.execPath, ["--import", "tsx", join(SWARMD_ROOT, "src/main.ts")], {
      cwd: SWARMD_ROOT,
      env: {
        ...process.env,
        ...ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        SWARM_PORT: "0",
        SWARM_DATA_DIR: "/nonexistent/never-made",
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(started.status, 1);
    assert.match(started.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
  });
});
