import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { type Daemon, startDaemon, waitForState } from "../support/daemon.ts";
import { parseSamples, sampleValue } from "../support/prometheus-text.ts";

const TOKEN = "metrics-tok-5d1e0c";
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A live daemon in this process, simulated sandboxes, a real ledger: `GET /metrics` as a scraper sees it. */
describe("GET /metrics", () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ token: TOKEN, runtime: () => createMemoryRuntime() });
  });
  after(() => d.stop());

  const scrape = async (headers: Record<string, string> = AUTH) => {
    const res = await fetch(`${d.url}/metrics`, { headers });
    return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
  };

  it("needs the bearer token, like every route but /health", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: TOKEN }] as Array<
      Record<string, string>
    >) {
      const refused = await scrape(headers);
      assert.equal(refused.status, 401, JSON.stringify(headers));
      assert.deepEqual(JSON.parse(refused.text), { error: "Missing or wrong bearer token." });
    }
    assert.equal((await scrape()).status, 200);
  });

  it("answers Prometheus's text format: its content type, HELP and TYPE for each family, every name swarmd_", async () => {
    const { status, contentType, text } = await scrape();
    assert.equal(status, 200);
    assert.equal(contentType, "text/plain; version=0.0.4; charset=utf-8");
    const samples = parseSamples(text);
    const typed = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    for (const [family, type] of [
      ["swarmd_agents", "gauge"],
      ["swarmd_agents_spawned_total", "counter"],
      ["swarmd_budget_denials_total", "counter"],
      ["swarmd_control_request_duration_seconds", "histogram"],
      ["swarmd_sandbox_operation_duration_seconds", "histogram"],
      ["swarmd_ledger_append_duration_seconds", "histogram"],
      ["swarmd_ledger_batch_appends", "histogram"],
      ["swarmd_sse_clients", "gauge"],
      ["swarmd_sse_ephemeral_events_dropped_total", "counter"],
      ["swarmd_harness_reconnects_total", "counter"],
      ["swarmd_model_tokens_total", "counter"],
      ["swarmd_model_cost_usd_total", "counter"],
      ["swarmd_process_cpu_seconds_total", "counter"],
      ["swarmd_nodejs_eventloop_lag_seconds", "gauge"],
    ]) {
      assert.equal(typed.get(family!), type, `# TYPE of ${family}`);
      assert.match(text, new RegExp(`^# HELP ${family} \\S`, "m"));
    }
    for (const family of typed.keys()) assert.match(family, /^swarmd_/);
    for (const sample of samples) assert.match(sample.name, /^swarmd_/);
    // Every state has its series from the first scrape, so a dashboard shows 0 rather than nothing.
    for (const state of ["spawning", "provisioning", "running", "paused", "done", "aborted"])
      assert.equal(sampleValue(text, "swarmd_agents", { state }), 0, state);
  });

  it("moves with a run: spawns, a budget refusal, agent states, tokens and cost as the ledger has them, requests by operation", async () => {
    const before = (await scrape()).text;
    assert.equal(sampleValue(before, "swarmd_agents_spawned_total"), 0);

    const created = await d.call(
      "POST",
      "/runs",
      { spec: { name: "x", script: [{ text: "hi" }] }, prompt: "go", keepAlive: true, budget: { spawnDepth: 0 } },
      AUTH,
    );
    assert.equal(created.status, 202);
    const { runId, rootAgentId } = created.body;
    const result = await d.call("GET", `/agents/${rootAgentId}/result?wait=30`, undefined, AUTH);
    assert.equal(result.body.result, "hi");
    const refused = await d.call(
      "POST",
      `/runs/${runId}/agents`,
      { parentAgentId: rootAgentId, spec: { name: "child", script: [] } },
      AUTH,
    );
    assert.equal(refused.status, 202);
    assert.equal((await d.call("POST", `/agents/${rootAgentId}/stop`, { mode: "drain" }, AUTH)).status, 202);
    await waitForState(d, rootAgentId, "done", 30_000, AUTH);
    assert.equal((await d.call("GET", "/nowhere", undefined, AUTH)).status, 404);

    const { text } = await scrape();
    assert.equal(sampleValue(text, "swarmd_agents_spawned_total"), 2, "the root and the refused child");
    assert.equal(sampleValue(text, "swarmd_budget_denials_total", { dimension: "spawnDepth" }), 1);
    assert.equal(sampleValue(text, "swarmd_agents", { state: "done" }), 2);
    assert.equal(sampleValue(text, "swarmd_agents", { state: "running" }), 0);

    const usage = (await d.call("GET", `/runs/${runId}`, undefined, AUTH)).body.usage;
    assert.ok(usage.inputTokens > 0 && usage.costUsd > 0, JSON.stringify(usage));
    const model = { provider: "swarmd-script", model: "scripted" };
    assert.equal(sampleValue(text, "swarmd_model_tokens_total", { ...model, kind: "input" }), usage.inputTokens);
    assert.equal(sampleValue(text, "swarmd_model_tokens_total", { ...model, kind: "output" }), usage.outputTokens);
    assert.equal(
      sampleValue(text, "swarmd_model_tokens_total", { ...model, kind: "cache_read" }),
      usage.cacheReadTokens,
    );
    assert.ok(Math.abs(sampleValue(text, "swarmd_model_cost_usd_total", model)! - usage.costUsd) < 1e-12);

    const requests = (operation: string, status: string) =>
      sampleValue(text, "swarmd_control_request_duration_seconds_count", { operation, status });
    assert.equal(requests("create_run", "2xx"), 1);
    assert.equal(requests("spawn", "2xx"), 1);
    assert.equal(requests("drain", "2xx"), 1);
    assert.equal(requests("stop", "2xx"), undefined, "a drain is not counted as a stop");
    assert.equal(requests("result", "2xx"), 1);
    assert.equal(requests("unmatched", "4xx"), 1);
    assert.equal(
      sampleValue(text, "swarmd_control_request_duration_seconds_count", { operation: "metrics" }),
      undefined,
      "scrapes are not timed",
    );

    const sandbox = (operation: string) =>
      sampleValue(text, "swarmd_sandbox_operation_duration_seconds_count", { runtime: "simulated", operation });
    assert.equal(sandbox("provision"), 1, "the refused child got no sandbox");
    assert.equal(sandbox("close"), 1);
    assert.ok(sampleValue(text, "swarmd_ledger_append_duration_seconds_count")! >= 6);
    assert.ok(sampleValue(text, "swarmd_ledger_batch_appends_count")! >= 1);
    assert.ok(
      sampleValue(text, "swarmd_ledger_batch_appends_sum")! >= sampleValue(text, "swarmd_ledger_batch_appends_count")!,
    );
  });
});
