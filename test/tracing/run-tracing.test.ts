import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { RunTracing } from "../../src/tracing/run-tracing.ts";
import { startOtlpReceiver } from "../support/otlp-receiver.ts";
import { until } from "../support/poll.ts";

/** The tracer as the daemon runs it: its own process, fed what a real ledger commits. */
describe("the tracer process", () => {
  it("exports what the ledger commits; when it dies the ledger goes on and the daemon is told once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "swarmd-tracer-"));
    const receiver = await startOtlpReceiver();
    const warnings: string[] = [];
    const tracing = new RunTracing(
      join(dir, "data"),
      { warn: (m) => warnings.push(m) },
      {
        ...process.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: "50",
      },
    );
    const ledger = await openLedger(join(dir, "ledger"), { onCommit: tracing.committed });
    try {
      await tracing.ready();
      await ledger.append("r_1", [{ type: "run_started", agentId: null, data: { runId: "r_1" } }]);
      await until(() => receiver.spans.some((s) => s.name === "swarmd.run"), "the run's span was exported");

      process.kill(tracing.pid!, "SIGKILL");
      await until(() => warnings.some((w) => /the tracer exited/.test(w)), "the daemon heard of the tracer's end");
      for (let i = 0; i < 50; i++) await ledger.append("r_1", [{ type: "agent_woke", agentId: "a_1", data: {} }]);
      assert.equal(ledger.lastSeq("r_1"), 51, "appends go on without a tracer");
      assert.equal(warnings.filter((w) => /the tracer exited/.test(w)).length, 1, "one warning, not one per event");
      await tracing.close();
    } finally {
      await ledger.close();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("hands over what was committed before the daemon closed it: the last spans go out", async () => {
    const dir = mkdtempSync(join(tmpdir(), "swarmd-tracer-"));
    const receiver = await startOtlpReceiver();
    // A long batch delay: only the close makes the tracer export.
    const tracing = new RunTracing(
      join(dir, "data"),
      { warn: () => undefined },
      {
        ...process.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: "600000",
      },
    );
    const ledger = await openLedger(join(dir, "ledger"), { onCommit: tracing.committed });
    try {
      for (let r = 0; r < 20; r++)
        await ledger.append(`r_${r}`, [{ type: "run_started", agentId: null, data: { runId: `r_${r}` } }]);
      await tracing.close();
      assert.equal(receiver.spans.filter((s) => s.name === "swarmd.run").length, 20);
    } finally {
      await ledger.close();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
