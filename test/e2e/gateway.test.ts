import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { messagesRequestFacts } from "../../src/gateway/anthropic-wire.ts";
import { type DaemonProcess, sandboxProcesses, spawnDaemon, waitState } from "../support/daemon-process.ts";
import {
  startAnthropicUpstream,
  startOpenAIChatUpstream,
  type Upstream,
  type UpstreamAnswer,
} from "../support/model-upstreams.ts";

/**
 * Real models through the daemon, end to end: a daemon process with keys in its own environment,
 * process sandboxes (bubblewrap, no network), pi-ai's real Anthropic and OpenAI clients in the
 * harness, and local upstreams that speak each provider's streaming wire format. Each agent's first
 * call asks for a bash probe; its second answers with what the probe found.
 */

const ANTHROPIC_KEY = `sk-ant-api03-${randomBytes(16).toString("hex")}`;
const OPENAI_KEY = `sk-local-${randomBytes(16).toString("hex")}`;
/** Every call reports these counts (Anthropic's split; OpenAI's prompt_tokens holds the cached ones). */
const USAGE = { input: 1_000, output: 50, cacheRead: 200, cacheWrite: 100 };

/**
 * What the probe prints: which processes' environments and which readable files hold a key, with a
 * planted copy of each (a process started with the key in its environment, a file in /tmp) to show
 * the scan finds what is there; and whether the network answers. The keys travel in base64 and are
 * decoded into unexported shell variables, so the command itself (which the event log records)
 * does not hold them.
 */
function probe(upstreamPort: number): string {
  const b64 = (key: string) => Buffer.from(key).toString("base64");
  return [
    `A=$(echo ${b64(ANTHROPIC_KEY)} | base64 -d); O=$(echo ${b64(OPENAI_KEY)} | base64 -d)`,
    `PLANTED="$A" sleep 60 & P=$!; echo "$O" > /tmp/planted`,
    `for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null | grep -qF -e "$A" -e "$O" && { p=\${f#/proc/}; echo \${p%/environ}; }; done | sed "s/^$P$/planted/" | sort | tr '\\n' ' ' | sed 's/^/environ-hits=[/; s/ *$/]/'; echo`,
    `grep -rlsF -e "$A" -e "$O" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=bin --exclude-dir=sbin 2>/dev/null | tr '\\n' ' ' | sed 's/^/file-hits=[/; s/ *$/]/'; echo; kill $P`,
    `node -e 'const s=require("net").connect(${upstreamPort},"127.0.0.1");s.on("connect",()=>{console.log("network=open");process.exit(0)});s.on("error",e=>{console.log("network="+e.code);process.exit(0)})'`,
    `grep -c : /proc/net/dev | sed 's/^/interfaces=/'`,
    `node -e 'const s=require("net").connect("/control/model.sock");s.on("connect",()=>{console.log("gateway-socket=open");process.exit(0)});s.on("error",e=>{console.log("gateway-socket="+e.code);process.exit(0)})'`,
  ].join("; ");
}

/** Call 0: run the probe; call 1 onwards: report the newest tool result. */
function probeThenReport(port: () => number, lastToolResult: (body: unknown) => string) {
  return (body: unknown, n: number): UpstreamAnswer =>
    n === 0
      ? {
          reply: {
            toolCalls: [
              { id: `call_${randomBytes(4).toString("hex")}`, name: "bash", input: { command: probe(port()) } },
            ],
          },
          usage: USAGE,
        }
      : { reply: { text: `probe said: ${lastToolResult(body)}` }, usage: USAGE };
}

/** The newest tool message of an OpenAI Chat Completions request. */
function lastOpenAIToolResult(body: unknown): string {
  const messages = (body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
  const tool = [...messages].reverse().find((m) => m.role === "tool");
  if (!tool) return "";
  return typeof tool.content === "string" ? tool.content : JSON.stringify(tool.content);
}

function allFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) out.push(...allFiles(path));
    else if (stat?.isFile()) out.push(path);
  }
  return out;
}

describe("model gateway (process sandboxes, real provider clients, local upstreams)", { timeout: 300_000 }, () => {
  let dataDir: string;
  let d: DaemonProcess;
  let anthropic: Upstream;
  let openai: Upstream;

  before(async () => {
    anthropic = await startAnthropicUpstream({
      answer: probeThenReport(
        () => Number(new URL(anthropic.url).port),
        (body) => messagesRequestFacts(body).lastToolResultText,
      ),
    });
    openai = await startOpenAIChatUpstream({
      answer: probeThenReport(() => Number(new URL(openai.url).port), lastOpenAIToolResult),
    });
    dataDir = mkdtempSync(join(tmpdir(), "swarmd-gateway-"));
    const modelsFile = join(dataDir, "models.json");
    writeFileSync(
      modelsFile,
      JSON.stringify({
        providers: {
          // pi's own override of a built-in provider: the real anthropic models, sent to the local upstream.
          anthropic: { baseUrl: anthropic.url },
          "local-openai": {
            baseUrl: `${openai.url}/v1`,
            api: "openai-completions",
            apiKey: "LOCAL_OPENAI_KEY",
            models: [{ id: "local-coder", cost: { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 } }],
          },
        },
      }),
    );
    d = await spawnDaemon(join(dataDir, "data"), {
      SWARM_MODELS: modelsFile,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      LOCAL_OPENAI_KEY: OPENAI_KEY,
    });
  });

  after(async () => {
    await d?.kill("SIGTERM");
    for (const pid of sandboxProcesses(readdirSync(join(dataDir, "data", "sandboxes")))) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    await anthropic?.close();
    await openai?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function runProbe(model: { provider: string; id: string }) {
    const created = await d.call("POST", "/runs", {
      spec: { name: "prober", model, tools: ["bash"] },
      prompt: "probe your sandbox",
      keepAlive: true,
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const root = created.body.rootAgentId as string;
    const result = await d.call("GET", `/agents/${root}/result?wait=120`);
    assert.equal(result.body.outcome, "success", JSON.stringify(result.body));
    // While the agent is still live: its processes and every file of its sandbox, seen from the host.
    const view = await d.call("GET", `/agents/${root}`);
    const sandboxId = view.body.sandboxId as string;
    const pids = sandboxProcesses([sandboxId]);
    assert.ok(pids.length > 0, "the sandbox's processes are found");
    for (const pid of pids) {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      assert.ok(
        !environ.includes(ANTHROPIC_KEY) && !environ.includes(OPENAI_KEY),
        `no key in the environment of sandbox process ${pid}`,
      );
    }
    for (const file of allFiles(join(dataDir, "data", "sandboxes", sandboxId))) {
      const text = readFileSync(file, "utf8");
      assert.ok(!text.includes(ANTHROPIC_KEY) && !text.includes(OPENAI_KEY), `no key in ${file}`);
    }
    return { root, runId: created.body.runId as string, text: result.body.result as string, view: view.body };
  }

  it("anthropic: pi-ai's Anthropic client runs a tool-calling turn through the gateway; the key reaches the upstream only", async () => {
    const { text, view, runId } = await runProbe({ provider: "anthropic", id: "claude-3-5-haiku-20241022" });
    assert.match(text, /environ-hits=\[planted\]/, "no key in any environment the agent can read but the planted one");
    assert.match(text, /file-hits=\[\/tmp\/planted\]/, "no key in any file the agent can read but the planted one");
    assert.match(text, /network=(ECONNREFUSED|ENETUNREACH)/, "the sandbox has no network while its model works");
    assert.match(text, /interfaces=1\b/, "only the loopback interface");
    assert.match(
      text,
      /gateway-socket=EACCES/,
      "the agent's tools cannot reach the gateway socket: only its harness can",
    );
    const calls = anthropic.calls.filter((c) => c.path === "/v1/messages");
    assert.equal(calls.length, 2, "two model calls: the tool call, then the answer");
    for (const call of calls) {
      assert.equal(call.headers["x-api-key"], ANTHROPIC_KEY, "the daemon's key, added on the way out");
      assert.equal(call.headers.authorization, undefined);
      assert.equal((call.body as { model: string }).model, "claude-3-5-haiku-20241022");
    }
    // Metering: two calls at claude-3-5-haiku's prices (per million: 0.8 in, 4 out, 0.08 cache read, 1 cache write).
    const perCall = (USAGE.input * 0.8 + USAGE.output * 4 + USAGE.cacheRead * 0.08 + USAGE.cacheWrite * 1) / 1e6;
    assert.deepEqual(view.usage, {
      inputTokens: 2_000,
      outputTokens: 100,
      cacheReadTokens: 400,
      cacheWriteTokens: 200,
      costUsd: view.usage.costUsd,
      calls: 2,
    });
    assert.ok(
      Math.abs((view.usage.costUsd as number) - 2 * perCall) < 1e-12,
      `cost ${view.usage.costUsd} is two calls at the model's prices`,
    );
    const run = await d.call("GET", `/runs/${runId}`);
    assert.deepEqual(run.body.usage, view.usage, "the run's usage is its only agent's");
  });

  it("openai-completions: a custom provider from the models file, its key from the daemon's environment, usage with cached tokens", async () => {
    const { text, view } = await runProbe({ provider: "local-openai", id: "local-coder" });
    assert.match(text, /environ-hits=\[planted\]/);
    assert.match(text, /file-hits=\[\/tmp\/planted\]/);
    assert.match(text, /network=(ECONNREFUSED|ENETUNREACH)/);
    const calls = openai.calls.filter((c) => c.path === "/v1/chat/completions");
    assert.equal(calls.length, 2);
    for (const call of calls) {
      assert.equal(call.headers.authorization, `Bearer ${OPENAI_KEY}`);
      assert.deepEqual((call.body as { stream_options?: unknown }).stream_options, { include_usage: true });
    }
    // OpenAI reports no cache writes: the upstream's cacheWrite is folded into pi's reading of cached tokens.
    assert.equal(view.usage.calls, 2);
    assert.equal(view.usage.outputTokens, 100);
    assert.equal(
      view.usage.inputTokens + view.usage.cacheReadTokens + view.usage.cacheWriteTokens,
      2 * (USAGE.input + USAGE.cacheRead + USAGE.cacheWrite),
    );
  });

  it("a scripted tree with maxTokens stops at the cap (budget_denied, paused by budget) and goes on after raises and a resume", async () => {
    const script = [{ tool: "bash", args: { command: "echo one" } }, { text: "child done: {{lastToolResult}}" }];
    const created = await d.call("POST", "/runs", {
      spec: { name: "lead", script: [] },
      keepAlive: true,
      budget: { maxTokens: 800 },
    });
    const { runId, rootAgentId: root } = created.body as { runId: string; rootAgentId: string };
    await waitState(d, root, "running");
    const spawned = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: root,
      spec: { name: "kid", script },
      prompt: "go",
      budget: { maxTokens: 5_000 },
    });
    const kid = spawned.body.agentId as string;
    assert.equal((await d.call("GET", `/agents/${kid}`)).body.budget.maxTokens, 800, "no more than the lead has");
    await waitState(d, kid, "paused");
    const held = await d.call("GET", `/agents/${kid}`);
    assert.equal(held.body.pausedBy, "budget");
    assert.equal(held.body.usage.calls, 1, "one call went, the next is held");
    assert.deepEqual(
      [held.body.budget.remainingTokens, (await d.call("GET", `/agents/${root}`)).body.budget.remainingTokens],
      [0, 0],
      "the child's spending is the lead's too",
    );

    assert.equal(
      (await d.call("POST", `/agents/${kid}/budget`, { maxTokens: 100_000 })).status,
      409,
      "more than the lead has left",
    );
    const bad = await d.call("POST", `/agents/${root}/budget`, {});
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /maxTokens, maxCostUsd or both/);
    assert.equal((await d.call("POST", `/agents/a_00000000deadbeef/budget`, { maxTokens: 1 })).status, 404);
    assert.equal((await d.call("POST", `/agents/${root}/budget`, { maxTokens: 1_000_000 })).status, 200);
    const raised = await d.call("POST", `/agents/${kid}/budget`, { maxTokens: 100_000 });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.equal(raised.body.budget.maxTokens, 100_000);
    assert.equal((await d.call("GET", `/agents/${kid}`)).body.state, "paused", "a raise does not resume");
    assert.equal((await d.call("POST", `/agents/${kid}/resume`, {})).status, 202);
    const result = await d.call("GET", `/agents/${kid}/result?wait=60`);
    assert.equal(result.body.result, "child done: one\n");
    const run = await d.call("GET", `/runs/${runId}`);
    assert.equal(run.body.usage.calls, 2);
  });

  it("refuses a spec naming an unknown model with a 400 naming spec.model, and a spawn of a model the gateway cannot carry likewise", async () => {
    const refused = await d.call("POST", "/runs", {
      spec: { name: "x", model: { provider: "anthropic", id: "claude-nonexistent" } },
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error, /body\.spec\.model: unknown model anthropic\/claude-nonexistent/);
    const unknownProvider = await d.call("POST", "/runs", {
      spec: { name: "x", model: { provider: "nowhere", id: "m" } },
    });
    assert.equal(unknownProvider.status, 400);
    assert.match(unknownProvider.body.error, /body\.spec\.model/);
    const { runId, rootAgentId } = (
      await d.call("POST", "/runs", { spec: { name: "lead", script: [] }, keepAlive: true })
    ).body as { runId: string; rootAgentId: string };
    await waitState(d, rootAgentId, "running");
    const spawn = await d.call("POST", `/runs/${runId}/agents`, {
      parentAgentId: rootAgentId,
      spec: { name: "kid", model: { provider: "google", id: "gemini-2.5-flash" } },
    });
    assert.equal(spawn.status, 400);
    assert.match(spawn.body.error, /body\.spec\.model: google\/gemini-2\.5-flash speaks the google-generative-ai API/);
    assert.equal(
      (await d.call("GET", `/runs/${runId}`)).body.agents.length,
      1,
      "nothing recorded for the refused spawn",
    );
  });

  it("keeps the keys out of the ledger and the daemon's output", async () => {
    // Runs after the two real-model runs above: their events, results and index are in these files.
    // The newest writes of a LevelDB sit uncompressed in its log file; what is compacted is not searched.
    const files = allFiles(join(dataDir, "data")).filter((file) => !file.includes("/sandboxes/"));
    assert.ok(
      files.some((file) => file.includes("/ledger/")),
      "the ledger's files are read",
    );
    for (const file of files) {
      const bytes = readFileSync(file);
      assert.ok(!bytes.includes(ANTHROPIC_KEY) && !bytes.includes(OPENAI_KEY), `no key in ${file}`);
    }
    assert.ok(!d.output().includes(ANTHROPIC_KEY) && !d.output().includes(OPENAI_KEY), "no key in the daemon's output");
  });
});
