import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { call } from "../support/daemon.ts";
import { type DaemonProcess, freePort, spawnDaemon } from "../support/daemon-process.ts";

const REPO = resolve(import.meta.dirname, "../..");
const TOKEN = "prom-scrape-tok-8c21f4";
const AUTH = { authorization: `Bearer ${TOKEN}` };

const installed = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;
const isRoot = process.getuid?.() === 0;
// `make test` installs it (scripts/setup-machine.sh, as root on Debian); a direct run as root does the same.
if (!installed("prometheus") && isRoot)
  spawnSync(join(REPO, "scripts/setup-machine.sh"), ["--tests"], { stdio: "inherit" });
const skip =
  installed("prometheus") && installed("promtool")
    ? false
    : "prometheus is not installed and this is not root: apt-get install prometheus (Debian), or run make test as root";

/**
 * Debian's Prometheus server scraping a live daemon (its own process, simulated sandboxes) with the
 * bearer token, as an operator would run it: what it stores is what `/metrics` means.
 */
describe("Prometheus scrapes the daemon", { skip, timeout: 120_000 }, () => {
  let dir: string;
  let d: DaemonProcess;
  let prometheus: ChildProcess;
  let prometheusUrl: string;
  let prometheusOutput = "";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "swarmd-prometheus-"));
    d = await spawnDaemon(join(dir, "data"), { SWARM_RUNTIME: "simulated", SWARM_TOKEN: TOKEN });
    const target = new URL(d.url).host;
    const config = join(dir, "prometheus.yml");
    // JSON is YAML: no YAML writer needed. A second job scrapes without the token and must fail.
    writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: "1s", evaluation_interval: "1s" },
        scrape_configs: [
          { job_name: "swarmd", authorization: { credentials: TOKEN }, static_configs: [{ targets: [target] }] },
          { job_name: "swarmd-anonymous", static_configs: [{ targets: [target] }] },
        ],
      }),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      "prometheus",
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, "tsdb")}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    prometheus.stdout?.on("data", (chunk: Buffer) => (prometheusOutput += chunk.toString()));
    prometheus.stderr?.on("data", (chunk: Buffer) => (prometheusOutput += chunk.toString()));
    await until(
      "prometheus is ready",
      async () => (await fetch(`${prometheusUrl}/-/ready`).catch(() => undefined))?.status === 200,
    );
  });
  after(async () => {
    if (prometheus && prometheus.exitCode === null && prometheus.signalCode === null) {
      const exited = new Promise((done) => prometheus.once("exit", done));
      prometheus.kill("SIGTERM");
      await exited;
    }
    await d?.kill("SIGTERM");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Poll `check` every 250 ms until it holds; fail with `what` (and Prometheus's log) after 60 s. */
  async function until(what: string, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!(await check())) {
      if (prometheus.exitCode !== null)
        throw new Error(`prometheus exited (${prometheus.exitCode}): ${prometheusOutput}`);
      if (Date.now() > deadline)
        throw new Error(`${what} did not happen in 60 s; prometheus said: ${prometheusOutput.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** An instant query's one value, or `undefined` while Prometheus has no series for it. */
  async function query(promql: string): Promise<number | undefined> {
    const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as { status: string; data: { result: Array<{ value: [number, string] }> } };
    assert.equal(body.status, "success", promql);
    assert.ok(body.data.result.length <= 1, `${promql} has ${body.data.result.length} series`);
    const value = body.data.result[0]?.value[1];
    return value === undefined ? undefined : Number(value);
  }

  const eventually = (promql: string, expected: (value: number) => boolean) =>
    until(`${promql} as expected`, async () => {
      const value = await query(promql);
      return value !== undefined && expected(value);
    });

  it("stores a scripted run's agents, spawns, tokens and requests; up is 1 with the token and 0 without", async () => {
    await eventually('up{job="swarmd"}', (v) => v === 1);
    await eventually('swarmd_agents{job="swarmd",state="done"}', (v) => v === 0);

    const created = await call(
      d.url,
      "POST",
      "/runs",
      { spec: { name: "x", script: [{ text: "hi" }] }, prompt: "go" },
      AUTH,
    );
    assert.equal(created.status, 202);
    const result = await call(d.url, "GET", `/agents/${created.body.rootAgentId}/result?wait=30`, undefined, AUTH);
    assert.equal(result.body.result, "hi");

    await eventually('swarmd_agents{job="swarmd",state="done"}', (v) => v === 1);
    await eventually('swarmd_agents{job="swarmd",state="running"}', (v) => v === 0);
    await eventually('swarmd_agents_spawned_total{job="swarmd"}', (v) => v === 1);
    await eventually(
      'swarmd_model_tokens_total{job="swarmd",provider="swarmd-script",model="scripted",kind="input"}',
      (v) => v > 0,
    );
    await eventually(
      'swarmd_control_request_duration_seconds_count{job="swarmd",operation="create_run",status="2xx"}',
      (v) => v === 1,
    );
    await eventually(
      'swarmd_sandbox_operation_duration_seconds_count{job="swarmd",runtime="simulated",operation="provision"}',
      (v) => v === 1,
    );
    await eventually('swarmd_ledger_append_duration_seconds_count{job="swarmd"}', (v) => v > 0);
    await eventually('swarmd_process_resident_memory_bytes{job="swarmd"}', (v) => v > 0);
    assert.equal(await query('up{job="swarmd"}'), 1);
    await eventually('up{job="swarmd-anonymous"}', (v) => v === 0);
  });

  it("stores each node's gauges: the live sandboxes and the limits they reserve, its engine reachable and ready", async () => {
    const node = (name: string) => `${name}{job="swarmd",node="local"}`;
    await eventually(node("swarmd_node_ready"), (v) => v === 1);
    await eventually(node("swarmd_node_engine_reachable"), (v) => v === 1);
    await eventually(node("swarmd_node_sandboxes"), (v) => v === 0);
    const created = await call(
      d.url,
      "POST",
      "/runs",
      { spec: { name: "kept", script: [], limits: { cpus: 0.5, memoryMiB: 300 } }, keepAlive: true },
      AUTH,
    );
    assert.equal(created.status, 202);
    await eventually(node("swarmd_node_sandboxes"), (v) => v === 1);
    await eventually(node("swarmd_node_reserved_cpus"), (v) => v === 0.5);
    await eventually(node("swarmd_node_reserved_memory_bytes"), (v) => v === 300 * 1024 * 1024);
    assert.equal((await call(d.url, "DELETE", `/runs/${created.body.runId}`, undefined, AUTH)).status, 204);
    await eventually(node("swarmd_node_sandboxes"), (v) => v === 0);
    await eventually(node("swarmd_node_reserved_cpus"), (v) => v === 0);
    await eventually(node("swarmd_node_reserved_memory_bytes"), (v) => v === 0);
  });

  it("promtool check metrics finds nothing to say about the scraped text", async () => {
    const res = await fetch(`${d.url}/metrics`, { headers: AUTH });
    assert.equal(res.status, 200);
    const text = await res.text();
    const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`);
    assert.equal(`${check.stdout}${check.stderr}`.trim(), "");
  });
});
