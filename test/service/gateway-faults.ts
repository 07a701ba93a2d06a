import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { Pacing } from "../../src/gateway/pacing.ts";
import { scriptKey } from "../../src/ledger/ledger-keys.ts";
import { type MemoryService, startMemoryService } from "../support/memory-service.ts";
import { startAnthropicUpstream, type Upstream } from "../support/model-upstreams.ts";

describe("service: the model gateway under a 429 storm", () => {
  let s: MemoryService;
  let upstream: Upstream;
  let dir: string;
  before(async () => {
    // A storm: the first 30 calls and every fourth after are refused with retry-after 200 ms.
    upstream = await startAnthropicUpstream({
      rateLimit: (n) => n < 30 || (n < 120 && n % 4 === 0),
      answer: (_body, n) => ({ reply: { text: `answer ${n}` }, usage: { input: 100, output: 10 } }),
    });
    dir = mkdtempSync(join(tmpdir(), "swarmd-storm-"));
    const modelsFile = join(dir, "models.json");
    writeFileSync(
      modelsFile,
      JSON.stringify({
        providers: {
          storm: { baseUrl: upstream.url, api: "anthropic-messages", apiKey: "storm-key", models: [{ id: "m" }] },
        },
      }),
    );
    s = await startMemoryService({
      gateway: () =>
        new ModelGateway(
          loadModelCatalog(modelsFile),
          new Pacing({ concurrency: 4, perProvider: {}, maxBackoffMs: 5_000 }),
        ),
    });
  });
  after(async () => {
    await s.stop();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("20 agents slow down together and all finish: no 429 reaches a harness, no turn fails", {
    timeout: 120_000,
  }, async () => {
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.service.createRun({ spec: { name: `a${i}`, model: { provider: "storm", id: "m" } }, prompt: `hello ${i}` }),
      ),
    );
    const results = await Promise.all(runs.map((r) => s.service.result(r.rootAgentId, 100)));
    assert.deepEqual(
      results.map((r) => r.outcome),
      results.map(() => "success"),
    );
    assert.ok(upstream.rateLimited >= 30, `the storm happened (${upstream.rateLimited} refusals)`);
    for (const run of runs) {
      const types = (await s.events(run.runId)).map((e) => e.type);
      assert.ok(!types.includes("auto_retry_start"), "the harness never retried: the gateway absorbed every 429");
      assert.equal(types.filter((t) => t === "model_usage").length, 1, "one call, counted once");
    }
    const keys = new Set(upstream.calls.map((c) => c.headers["x-api-key"]));
    assert.deepEqual([...keys], ["storm-key"], "the models file's key, on every call");
  });
});

describe("service: a restart in the middle of a model call", () => {
  let s: MemoryService;
  before(async () => (s = await startMemoryService()));
  after(() => s.stop());

  it("loses no model_usage and counts none twice; the cut-off step is answered again, not skipped", {
    timeout: 60_000,
  }, async () => {
    const script = [
      { tool: "bash", args: { command: "echo before" } },
      { text: "slow answer after {{lastToolResult}}", delayMs: 1_500 },
    ];
    const { runId, rootAgentId: root } = await s.service.createRun({ spec: { name: "slow", script }, prompt: "go" });
    // The second step is handed out (its place is durable) and streaming when the daemon goes.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const cursor = JSON.parse((await s.ledger.getIndex(scriptKey(root))) ?? "{}") as {
        next?: number;
        pending?: { index: number } | null;
      };
      if (cursor.next === 2 && cursor.pending?.index === 1) break;
      assert.ok(Date.now() < deadline, "the second step never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    const before = (await s.events(runId)).filter((e) => e.type === "model_usage");
    assert.equal(before.length, 1, "the first call is recorded before its answer ended");
    await s.restart();
    const result = await s.service.result(root, 40);
    assert.equal(result.result, "slow answer after before\n", "the same step, answered in full after the restart");
    const usage = (await s.events(runId)).filter((e) => e.type === "model_usage");
    assert.equal(
      usage.length,
      2,
      "the first call and the completed second: the cut-off attempt was never answered in full",
    );
    assert.equal(new Set(usage.map((e) => (e.data as { callId: string }).callId)).size, 2, "no call counted twice");
    assert.equal(
      (await s.service.getAgent(root).catch(() => undefined))?.usage.calls ?? s.service.getRun(runId).usage.calls,
      2,
    );
  });
});
