import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";

/**
 * A local OTLP/HTTP trace receiver for tests: it takes `POST /v1/traces` in protobuf, as a
 * Collector does, and decodes each export with the OpenTelemetry proto definitions (no Collector
 * or Jaeger can be installed here). Spans come out as plain objects with hex ids, millisecond
 * times and attributes as JS values.
 */

// protobufjs code generated from opentelemetry-proto (devDependency `otlp-proto-definitions`).
const require = createRequire(import.meta.url);
const { opentelemetry } = require("otlp-proto-definitions/build/src/generated/root.js") as {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: {
            ExportTraceServiceRequest: {
              decode(bytes: Uint8Array): unknown;
              toObject(m: unknown, o: object): ProtoRequest;
            };
            ExportTraceServiceResponse: { encode(m: object): { finish(): Uint8Array } };
          };
        };
      };
    };
  };
};
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = opentelemetry.proto.collector.trace.v1;

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value?: AnyValue };
interface ProtoSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValue[];
  events?: { name: string; timeUnixNano: string; attributes?: KeyValue[] }[];
  links?: { traceId: string; spanId: string; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface ProtoRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: ProtoSpan[] }[];
  }[];
}

export type Value = string | number | boolean | Value[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined on a trace's root. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, Value>;
  events: { name: string; atMs: number; attributes: Record<string, Value> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, Value> }[];
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  resource: Record<string, Value>;
  scope: string;
}

export interface OtlpReceiver {
  /** What `OTEL_EXPORTER_OTLP_ENDPOINT` should be (the exporter adds `/v1/traces`). */
  url: string;
  spans: ReceivedSpan[];
  /** Requests seen, with their path and content type (to check the exporter's protocol). */
  requests: { path: string; contentType: string; headers: Record<string, string | string[] | undefined> }[];
  close(): Promise<void>;
}

const hex = (base64: string | undefined) => (base64 ? Buffer.from(base64, "base64").toString("hex") : "");
const ms = (nanos: string) => Number(BigInt(nanos) / 1_000_000n);

function value(v: AnyValue | undefined): Value {
  if (!v) return "";
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return "";
}
const attrs = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver["requests"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: req.headers["content-type"] ?? "", headers: req.headers });
      if (
        req.method !== "POST" ||
        req.url !== "/v1/traces" ||
        req.headers["content-type"] !== "application/x-protobuf"
      ) {
        res.writeHead(415).end();
        return;
      }
      const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(Buffer.concat(chunks)), {
        longs: String,
        bytes: String,
      });
      for (const rs of decoded.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              ...(s.parentSpanId ? { parentSpanId: hex(s.parentSpanId) } : {}),
              name: s.name,
              kind: s.kind,
              startMs: ms(s.startTimeUnixNano),
              endMs: ms(s.endTimeUnixNano),
              attributes: attrs(s.attributes),
              events: (s.events ?? []).map((e) => ({
                name: e.name,
                atMs: ms(e.timeUnixNano),
                attributes: attrs(e.attributes),
              })),
              links: (s.links ?? []).map((l) => ({
                traceId: hex(l.traceId),
                spanId: hex(l.spanId),
                attributes: attrs(l.attributes),
              })),
              status: { code: s.status?.code ?? 0, ...(s.status?.message ? { message: s.status.message } : {}) },
              resource,
              scope: ss.scope?.name ?? "",
            });
          }
        }
      }
      res
        .writeHead(200, { "content-type": "application/x-protobuf" })
        .end(Buffer.from(ExportTraceServiceResponse.encode({}).finish()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
