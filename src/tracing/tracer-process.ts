/**
 * The tracer: a process of its own, started by the daemon (`RunTracing`) at the lowest CPU
 * priority, that folds the ledger events the daemon writes to its stdin into spans and exports
 * them with the OpenTelemetry SDK. Building, serialising and sending spans (and their garbage
 * collection) never take the daemon's event loop or its threads' CPU (bench/tracing.ts). Events
 * already handed over are exported even when the daemon is killed: stdin ends, the last spans go.
 *
 * stdin, one line each (`tracer-lines.ts`): `E<json>` a committed ledger event, `R<json>` one
 * replayed at start-up (folded, not exported), `P<json>` a prompt. stdout: `ready` once loaded.
 * stderr: warnings, one per line, which the daemon logs.
 */
import type { LedgerEvent } from "../ledger/ledger.ts";
import { createResultStore } from "../results/result-store.ts";
import { SpanFold } from "./span-fold.ts";
import { createOtlpSink } from "./span-sink.ts";
import { loadTraceConfig } from "./trace-config.ts";

const config = loadTraceConfig(process.env);
const dataDir = process.env.SWARM_DATA_DIR;
if (!config || !dataDir) {
  process.stderr.write("the tracer needs OTEL_EXPORTER_OTLP_ENDPOINT and SWARM_DATA_DIR\n");
  process.exit(2);
}
const results = createResultStore(dataDir);
const sink = createOtlpSink(config, { warn: (message) => process.stderr.write(`${message.replace(/\n/g, " ")}\n`) });
const fold = new SpanFold({ ...config, readResult: (agentId) => results.read(agentId) });

function line(text: string): void {
  const kind = text[0];
  let body: unknown;
  try {
    body = JSON.parse(text.slice(1));
  } catch {
    return; // not a line of the daemon's
  }
  if (kind === "P") {
    const { agentId, text } = body as { agentId: string; text: string };
    fold.prompted(agentId, text);
    return;
  }
  const spans = fold.apply(body as LedgerEvent);
  // Spans that ended before a restart were exported then (or lost): a replay only rebuilds state.
  if (kind === "E") for (const span of spans) sink.emit(span);
}

// Lines as they come (a chunk ends anywhere; the rest waits for the next).
let rest = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  const text = rest + chunk;
  let from = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", from)) {
    if (at > from) line(text.slice(from, at));
    from = at + 1;
  }
  rest = text.slice(from);
});
// The daemon closed the pipe (a clean stop, or it died): export what has ended, then go.
process.stdin.on("end", () => {
  void sink.close().finally(() => process.exit(0));
});
process.stdout.write("ready\n");
