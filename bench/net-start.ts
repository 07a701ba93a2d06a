/**
 * Networked starts under load (process runtime, bubblewrap): BENCH_STARTS (400) sandboxes with
 * `network: true`, BENCH_CONCURRENCY (8) provisioned and started at once, each batch closed before
 * the next; prints how many starts failed and why (each distinct message once, with its count).
 * It reproduced `bwrap: loopback: Failed RTM_NEWADDR: No child processes` (slirp4netns's
 * `--configure` setting `lo` up while bwrap still set up its loopback: see user-net.ts) at 1 to 3
 * in 100 starts before slirp4netns stopped configuring the namespace. Needs root, bwrap and
 * slirp4netns. Traffic: none (the harness starts, nothing connects anywhere).
 * Not a test: nothing is asserted; exits 1 when a start failed. `npx tsx bench/net-start.ts`.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { errorMessage } from "../src/errors.ts";
import { createProcessRuntime } from "../src/sandbox/process/process-runtime.ts";
import { sandboxLayout } from "../src/sandbox/process/sandbox-layout.ts";
import { scriptGateway } from "../test/support/script-gateway.ts";
import { env } from "./stats.ts";

const STARTS = env("BENCH_STARTS", 400);
const CONCURRENCY = env("BENCH_CONCURRENCY", 8);
const quiet = { info: () => undefined, warn: () => undefined };
const signal = () => AbortSignal.timeout(120_000);

const dataDir = await mkdtemp(join(tmpdir(), "swarmd-net-start-"));
const models = scriptGateway();
const rt = models.wrap(createProcessRuntime({ dataDir, logger: quiet, isolation: "bubblewrap" }));
const failures = new Map<string, number>();
let done = 0;
let failed = 0;
const started = performance.now();
try {
  while (done < STARTS) {
    const batch = Array.from({ length: Math.min(CONCURRENCY, STARTS - done) }, () => randomUUID());
    await Promise.all(
      batch.map(async (sandboxId) => {
        const spec = { name: "net", script: [{ text: "done" }] };
        try {
          await rt.provision(
            { sandboxId, runId: `run-${randomUUID()}`, agentId: `agent-${randomUUID()}`, spec, network: true },
            signal(),
          );
          await rt.startHarness(sandboxId, signal());
        } catch (err) {
          failed++;
          // bwrap's own words, also when the start failed on slirp4netns's side (bwrap died first).
          const output = await readFile(sandboxLayout(dataDir, sandboxId).output, "utf8").catch(() => "");
          const text = errorMessage(err);
          const said = output.trim() && !text.includes(output.trim()) ? ` [harness output: ${output.trim()}]` : "";
          // One line per cause: the sandbox id and bwrap's pid differ from start to start.
          const message = `${text}${said}`.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>").replace(/\d{3,}/g, "<n>");
          failures.set(message, (failures.get(message) ?? 0) + 1);
        }
      }),
    );
    await Promise.all(batch.map((id) => rt.close(id, signal()).catch(() => undefined)));
    done += batch.length;
    if (done % 80 === 0 || done === STARTS) console.error(`${done}/${STARTS} started, ${failed} failed`);
  }
} finally {
  await models.close();
  await rm(dataDir, { recursive: true, force: true });
}
const seconds = (performance.now() - started) / 1000;
console.log(
  `networked starts: ${done}, ${CONCURRENCY} at once; failed: ${failed} (${((100 * failed) / done).toFixed(1)} %); ${seconds.toFixed(0)} s; load ${loadavg()[0]?.toFixed(1)}`,
);
for (const [message, count] of failures) console.log(`  ${count} × ${message}`);
process.exitCode = failed > 0 ? 1 : 0;
