/**
 * Persisted events per second through the ledger with traces on (every span exported over
 * OTLP/HTTP protobuf to a receiver in another process) beside the same ledger with traces off.
 * The events are a run's real mix: per turn an `agent_start`, three of pi's inner turns with a
 * model call each and two tool calls (~350-byte results), `agent_end` and `handle_settled`, for
 * 50 agents spawned first: 16 events and 6 spans per turn, built and exported as fast as the
 * ledger takes the events. Modes interleave per repetition; median of `BENCH_TRACE_REPS`.
 *
 *   npx tsx bench/tracing.ts
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CommittedBatch, NewEvent } from "../src/ledger/ledger.ts";
import { openLedger } from "../src/ledger/level-ledger.ts";
import { RunTracing } from "../src/tracing/run-tracing.ts";
import { fmtRate, fmtRatio, markdownTable, median } from "./stats.ts";

const EVENTS = Number(process.env.BENCH_TRACE_EVENTS ?? 20_000);
const REPS = Number(process.env.BENCH_TRACE_REPS ?? 5);
const AGENTS = 50;
const CHUNK = 100;
const RUN = "r_bench";

/** A receiver in its own process (its CPU is not the daemon's): counts spans' bytes, answers 200. */
async function startReceiver(): Promise<{ url: string; child: ChildProcess; requests(): Promise<number> }> {
  const code = `
    let requests = 0;
    const server = require("node:http").createServer((req, res) => {
      if (req.method === "GET") return res.end(String(requests));
      req.on("data", () => {});
      req.on("end", () => { requests++; res.writeHead(200, { "content-type": "application/x-protobuf" }).end(); });
    });
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve) =>
    child.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim())),
  );
  const url = `http://127.0.0.1:${port}`;
  return { url, child, requests: async () => Number(await (await fetch(url)).text()) };
}

/** A run's events: spawns, then turns of model and tool calls round-robin over the agents. */
function runEvents(count: number): NewEvent[] {
  const events: NewEvent[] = [{ type: "run_started", agentId: null, data: { runId: RUN } }];
  for (let a = 0; a < AGENTS; a++) {
    events.push({
      type: "agent_spawned",
      agentId: `a_${a}`,
      data: {
        parentAgentId: a === 0 ? null : "a_0",
        runId: RUN,
        specName: "worker",
        depth: a === 0 ? 0 : 1,
        spawnIndex: a,
        sandboxId: null,
        waitFor: [],
        prompt: "work",
      },
    });
  }
  let hseq = 0;
  for (let i = 0; events.length < count; i++) {
    const agentId = `a_${i % AGENTS}`;
    const call = (n: number): NewEvent => ({
      type: "model_usage",
      agentId,
      data: {
        callId: `c_${i}_${n}`,
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        inputTokens: 1200,
        outputTokens: 80,
        cacheReadTokens: 9000,
        cacheWriteTokens: 0,
        costUsd: 0.0051,
        durationMs: 900,
        heldMs: 0,
        usageKnown: true,
      },
    });
    const tool = (n: number): NewEvent[] => [
      {
        type: "tool_start",
        agentId,
        data: { hseq: ++hseq, harnessAt: 0, toolCallId: `t_${i}_${n}`, toolName: "bash", args: { command: "ls -la" } },
      },
      {
        type: "tool_end",
        agentId,
        data: {
          hseq: ++hseq,
          harnessAt: 0,
          toolCallId: `t_${i}_${n}`,
          toolName: "bash",
          isError: false,
          output: `line ${i}: ${"x".repeat(160)}`,
        },
      },
    ];
    // pi's inner turns: one per model call, its tool calls inside it.
    const inner = (...within: NewEvent[]): NewEvent[] => [
      { type: "turn_start", agentId, data: { hseq: ++hseq, harnessAt: 0 } },
      ...within,
      { type: "turn_end", agentId, data: { hseq: ++hseq, harnessAt: 0, stopReason: "toolUse", toolResults: 1 } },
    ];
    events.push({ type: "agent_start", agentId, data: { hseq: ++hseq, harnessAt: 0 } });
    events.push(...inner(call(1), ...tool(1)), ...inner(call(2), ...tool(2)), ...inner(call(3)));
    events.push({ type: "agent_end", agentId, data: { hseq: ++hseq, harnessAt: 0, messages: 9 } });
    events.push({ type: "handle_settled", agentId, data: { outcome: "success", resultRef: null } });
  }
  return events.slice(0, count);
}

/** `off2`: traces off again, an A/A pair with `off` that shows how far two identical runs differ here. */
type Mode = "off" | "on" | "off2";
let dropped = 0;
/** From the last append to the tracing thread's last export: how far behind it ran. */
const catchUpMs: number[] = [];
type Pattern = "chunk" | "single";

async function measure(mode: Mode, pattern: Pattern, events: NewEvent[], receiverUrl: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-bench-trace-"));
  let tracing: RunTracing | undefined;
  if (mode === "on") {
    // Every span exported: none dropped by the SDK's queue of 2048 in this burst.
    const env = {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_BSP_MAX_QUEUE_SIZE: String(1 << 20),
      ...(process.env.PROF ? { NODE_OPTIONS: "--cpu-prof --cpu-prof-dir=/tmp/tprof2" } : {}),
    };
    tracing = new RunTracing(dir, { warn: (message: string) => console.error(message) }, env);
    await tracing.ready(); // the daemon starts its tracer once, at start-up
  }
  const ledger = await openLedger(join(dir, "ledger"), {
    onCommit: tracing ? (batch: CommittedBatch) => tracing.committed(batch) : undefined,
  });
  const start = performance.now();
  for (let i = 0; i < events.length; i += CHUNK) {
    const chunk = events.slice(i, i + CHUNK);
    if (pattern === "chunk") await ledger.append(RUN, chunk);
    else await Promise.all(chunk.map((e) => ledger.append(RUN, [e])));
  }
  const seconds = (performance.now() - start) / 1000;
  await ledger.close();
  const drained = performance.now();
  await tracing?.close();
  if (tracing) {
    dropped += tracing.dropped;
    catchUpMs.push(performance.now() - drained);
  }
  rmSync(dir, { recursive: true, force: true });
  return events.length / seconds;
}

async function main(): Promise<void> {
  const receiver = await startReceiver();
  const events = runEvents(EVENTS);
  const rates: Record<`${Mode}-${Pattern}`, number[]> = {
    "off-chunk": [],
    "on-chunk": [],
    "off2-chunk": [],
    "off-single": [],
    "on-single": [],
    "off2-single": [],
  };
  const orders: Mode[][] = [
    ["off", "on", "off2"],
    ["on", "off2", "off"],
    ["off2", "off", "on"],
  ];
  await measure("on", "chunk", events.slice(0, 2000), receiver.url); // warm-up: modules, JIT
  for (let rep = 0; rep < REPS; rep++) {
    for (const pattern of ["chunk", "single"] as const) {
      for (const mode of orders[rep % orders.length]!) {
        rates[`${mode}-${pattern}`].push(await measure(mode, pattern, events, receiver.url));
      }
    }
  }
  const exports = await receiver.requests();
  receiver.child.kill();
  const row = (label: string, pattern: Pattern) => {
    const on = median(rates[`on-${pattern}`]);
    const off = median(rates[`off-${pattern}`]);
    const off2 = median(rates[`off2-${pattern}`]);
    return [label, fmtRate(on), fmtRate(off), fmtRatio(on, off), fmtRatio(off2, off)];
  };
  console.log(`## Traces on and off (\`bench/tracing.ts\`)\n`);
  console.log(
    markdownTable(
      [
        `${EVENTS.toLocaleString("en-US")} persisted events (median of ${REPS})`,
        "traces on (OTLP export)",
        "traces off",
        "on / off",
        "off again / off (A/A: the noise)",
      ],
      [row("ledger, 100 events per append", "chunk"), row("ledger, 1 event per append (100 in flight)", "single")],
    ),
  );
  console.log(
    `\n${exports} OTLP exports received; ${dropped} events dropped by the tracer; its last export came a median ${Math.round(median(catchUpMs))} ms after the last append.`,
  );
}

await main();
