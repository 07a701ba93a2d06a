/**
 * `make test`'s runner: node:test's own `run()` over the files named, in the order named (`node
 * --test` sorts them by name, which would start the longest files last), N at a time, each in a
 * process of its own; then the files after `--serial`, one at a time with nothing else running:
 * those whose assertions hold only when their process gets the CPU in time (a 50 ms time limit of
 * the daemon's, an abort that must be prompt). One report for both groups: the spec reporter prints
 * every test and the summary, slowest-files.mjs the slowest files after it; the exit code is 1 when
 * a test failed. Plain JavaScript, started with `--import tsx`, which the test files' processes
 * inherit:
 *
 *   node --import tsx test/support/run-tests.mjs --concurrency=4 test/faults/*.test.ts --serial test/harness/harness.test.ts
 */
import { resolve } from "node:path";
import { argv, stdout } from "node:process";
import { Readable } from "node:stream";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import slowestFiles from "./slowest-files.mjs";

const args = argv.slice(2);
const concurrency = Number(args.find((a) => a.startsWith("--concurrency="))?.slice("--concurrency=".length) ?? 1);
const serialAt = args.includes("--serial") ? args.indexOf("--serial") : args.length;
const filesOf = (list) => [...new Set(list.filter((a) => !a.startsWith("--")).map((file) => resolve(file)))];
const serial = filesOf(args.slice(serialAt));
const together = filesOf(args.slice(0, serialAt)).filter((file) => !serial.includes(file));
if (together.length + serial.length === 0 || !(concurrency >= 1)) {
  console.error("usage: node --import tsx test/support/run-tests.mjs [--concurrency=N] FILE... [--serial FILE...]");
  process.exit(2);
}

/** The summary counts each run reports at its end (`tests 620`, `pass 608`, ...). */
const SUMMARY = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) (\d+(?:\.\d+)?)$/;

/**
 * The events of both runs as one stream, their summaries added up into one at the end: the
 * summary lines (`test:diagnostic`) and, on the Nodes that send it, the run's `test:summary`.
 */
async function* events() {
  const totals = new Map();
  let runSummary;
  for (const [files, n] of [
    [together, concurrency],
    [serial, 1],
  ]) {
    if (files.length === 0) continue;
    for await (const event of run({ files, concurrency: n })) {
      if (event.type === "test:fail" && event.data.todo === undefined) process.exitCode = 1;
      const line = event.type === "test:diagnostic" && event.data.nesting === 0 && SUMMARY.exec(event.data.message);
      if (line) totals.set(line[1], (totals.get(line[1]) ?? 0) + Number(line[2]));
      else if (event.type === "test:summary" && event.data.file === undefined)
        runSummary = added(runSummary, event.data);
      else yield event;
    }
  }
  for (const [name, value] of totals)
    yield { type: "test:diagnostic", data: { nesting: 0, message: `${name} ${value}` } };
  if (runSummary) yield { type: "test:summary", data: runSummary };
}

/** Two runs' `test:summary` data as one: counts and durations added, a success only when both were. */
function added(a, b) {
  if (!a) return b;
  const counts = { ...a.counts };
  for (const [name, value] of Object.entries(b.counts ?? {})) counts[name] = (counts[name] ?? 0) + value;
  return { ...a, counts, success: a.success && b.success, duration_ms: a.duration_ms + b.duration_ms };
}

const stream = Readable.from(events());
// `spec` is a reporter class on the Nodes this runs on; a plain reporter function is taken as it is.
stream.compose(typeof spec === "function" && spec.prototype ? new spec() : spec).pipe(stdout);
stream.compose(slowestFiles).pipe(stdout);
