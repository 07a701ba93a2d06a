/**
 * OpenTelemetry traces end to end: the daemon as its own process, exporting OTLP/HTTP protobuf to
 * a receiver in this test that decodes each export with the OpenTelemetry proto definitions.
 * A run with a child, tool calls, model calls, an approval and a pause gives one trace whose tree
 * is the tree of agents; across a SIGKILL, spans still open end after the restart in the same
 * tree with the start times the ledger gave them, and the log lines about the run carry its ids.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { inbox } from "../support/approval-runs.ts";
import type { Json } from "../support/daemon.ts";
import { type DaemonProcess, spawnDaemon } from "../support/daemon-process.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { pollUntil } from "../support/poll.ts";

/** Export every 100 ms, so a test waits for spans, not for the default 5 s batch delay. */
const otelEnv = (receiver: OtlpReceiver, extra: Record<string, string> = {}) => ({
  SWARM_RUNTIME: "simulated",
  SWARM_LOG_FORMAT: "json",
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_BSP_SCHEDULE_DELAY: "100",
  OTEL_SERVICE_NAME: "swarmd-under-test",
  ...extra,
});

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string, agentId?: string): ReceivedSpan => {
  const found = byName(spans, name).filter((s) => agentId === undefined || s.attributes["gen_ai.agent.id"] === agentId);
  assert.equal(found.length, 1, `one ${name} span${agentId ? ` of ${agentId}` : ""}, got ${found.length}`);
  return found[0]!;
};
const spansUntil = (receiver: OtlpReceiver, what: string, done: (spans: ReceivedSpan[]) => boolean) =>
  pollUntil(
    async () => receiver.spans,
    (spans) => done(spans),
    `the receiver never got ${what}`,
    30_000,
  );

describe("OpenTelemetry traces of a run", () => {
  let receiver: OtlpReceiver;
  let dir: string;
  let d: DaemonProcess;
  before(async () => {
    receiver = await startOtlpReceiver();
    dir = mkdtempSync(join(tmpdir(), "swarmd-traces-"));
    d = await spawnDaemon(
      join(dir, "data"),
      otelEnv(receiver, {
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
        OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=swarm-test",
      }),
    );
  });
  after(async () => {
    await d?.kill("SIGTERM");
    await receiver?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a run with a child, tools, model calls, an approval and a pause is one trace shaped like its tree", async () => {
    const helper = {
      name: "helper",
      script: [{ tool: "bash", args: { command: "echo helped" } }, { text: "helper done" }],
    };
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "lead",
        approve: [{ tool: "write" }],
        script: [
          { tool: "spawn_agent", args: { spec: helper, prompt: "help the lead" } },
          { tool: "write", args: { path: "/work/out.txt", content: "written" } },
          { text: "lead done" },
        ],
      },
      prompt: "lead the work",
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const runId = created.body.runId as string;
    const lead = created.body.rootAgentId as string;
    const [request] = await inbox(d.call, runId, 1);
    assert.equal(request.tool, "write");
    assert.equal((await d.call("POST", `/agents/${lead}/pause`, {})).status, 202);
    await pollUntil(
      async () => (await d.call("GET", `/agents/${lead}`)).body.state,
      (state) => state === "paused",
      "the lead never paused",
    );
    assert.equal((await d.call("POST", `/agents/${lead}/resume`, {})).status, 202);
    const allowed = await d.call("POST", `/agents/${lead}/permissions/${request.requestId}`, { decision: "allow" });
    assert.equal(allowed.status, 202, JSON.stringify(allowed.body));
    const agents = (await d.call("GET", `/runs/${runId}`)).body.agents as Json[];
    const helperId = agents.find((a) => a.agentId !== lead)?.agentId as string;
    assert.ok(helperId, "the lead spawned its helper");

    // Both agents end (the lead once its helper has): every span of the run is exported.
    const spans = await spansUntil(
      receiver,
      "both create_agent spans",
      (all) => byName(all, "create_agent lead").length === 1,
    );
    const trace = spans.filter(
      (s) =>
        s.attributes["swarmd.run.id"] === runId ||
        s.traceId === spans.find((r) => r.attributes["swarmd.run.id"] === runId)?.traceId,
    );
    const run = one(trace, "swarmd.run");
    assert.equal(run.parentSpanId, undefined, "the run's span is the trace's root");
    assert.equal(new Set(trace.map((s) => s.traceId)).size, 1, "one trace per run");
    assert.equal(run.resource["service.name"], "swarmd-under-test", "OTEL_SERVICE_NAME applies");
    assert.equal(run.scope, "swarmd");

    const leadSpan = one(trace, "create_agent lead");
    const helperSpan = one(trace, "create_agent helper");
    assert.equal(leadSpan.parentSpanId, run.spanId, "the root agent hangs under the run");
    assert.equal(helperSpan.parentSpanId, leadSpan.spanId, "a child agent hangs under its parent agent");
    assert.equal(leadSpan.kind, 3, "create_agent is a client span");
    assert.deepEqual(
      [
        leadSpan.attributes["gen_ai.operation.name"],
        leadSpan.attributes["gen_ai.agent.name"],
        leadSpan.attributes["gen_ai.agent.id"],
      ],
      ["create_agent", "lead", lead],
    );
    assert.equal(helperSpan.attributes["gen_ai.agent.id"], helperId);
    assert.equal(leadSpan.attributes["swarmd.outcome"], "success");
    assert.equal(leadSpan.status.code, 1);
    assert.ok(
      leadSpan.startMs <= helperSpan.startMs && helperSpan.endMs <= leadSpan.endMs,
      "the child lives within its parent",
    );

    // The approval and the pause are events on the lead's span, in order.
    const events = leadSpan.events.map(
      (e) => `${e.name}${e.attributes["swarmd.to"] ? `:${e.attributes["swarmd.to"]}` : ""}`,
    );
    const at = (name: string) => events.indexOf(name);
    assert.ok(at("permission_request") >= 0, `a permission_request event: ${events.join(", ")}`);
    assert.ok(at("agent_state_changed:paused") > at("permission_request"), events.join(", "));
    assert.ok(at("agent_state_changed:running") >= 0);
    assert.ok(at("permission_resolved") > at("agent_state_changed:paused"), events.join(", "));
    const asked = leadSpan.events.find((e) => e.name === "permission_request")!;
    assert.equal(asked.attributes["swarmd.tool"], "write");
    assert.equal(asked.attributes["swarmd.request_id"], request.requestId);
    assert.equal(leadSpan.events.find((e) => e.name === "permission_resolved")!.attributes["swarmd.decision"], "allow");

    // One turn each, under its agent; the tool calls and model calls under the turn.
    const leadTurn = one(trace, "invoke_agent lead");
    assert.equal(leadTurn.parentSpanId, leadSpan.spanId);
    assert.equal(leadTurn.attributes["gen_ai.operation.name"], "invoke_agent");
    assert.equal(leadTurn.attributes["swarmd.turn"], 1);
    assert.equal(leadTurn.status.code, 1);
    const helperTurn = one(trace, "invoke_agent helper");
    assert.equal(helperTurn.parentSpanId, helperSpan.spanId);
    const spawnCall = one(trace, "execute_tool spawn_agent");
    const writeCall = one(trace, "execute_tool write");
    const bashCall = one(trace, "execute_tool bash");
    assert.equal(spawnCall.parentSpanId, leadTurn.spanId);
    assert.equal(writeCall.parentSpanId, leadTurn.spanId);
    assert.equal(bashCall.parentSpanId, helperTurn.spanId);
    assert.equal(writeCall.attributes["gen_ai.tool.name"], "write");
    assert.equal(typeof writeCall.attributes["gen_ai.tool.call.id"], "string");
    assert.ok(writeCall.endMs >= asked.atMs, "the write ran once it was allowed");
    const chats = trace.filter((s) => s.name === "chat scripted");
    assert.equal(
      chats.filter((s) => s.parentSpanId === leadTurn.spanId).length,
      3,
      "three model calls in the lead's turn",
    );
    assert.equal(chats.filter((s) => s.parentSpanId === helperTurn.spanId).length, 2);
    for (const chat of chats) {
      assert.equal(chat.kind, 3);
      assert.equal(chat.attributes["gen_ai.operation.name"], "chat");
      assert.equal(chat.attributes["gen_ai.provider.name"], "swarmd-script");
      assert.equal(chat.attributes["gen_ai.request.model"], "scripted");
      assert.equal(chat.attributes["gen_ai.response.model"], "scripted");
      assert.ok((chat.attributes["gen_ai.usage.input_tokens"] as number) > 0, "input tokens counted");
      assert.ok((chat.attributes["gen_ai.usage.output_tokens"] as number) > 0, "output tokens counted");
      assert.ok((chat.attributes["swarmd.cost_usd"] as number) > 0, "the call's cost");
      assert.equal(typeof chat.attributes["swarmd.held_ms"], "number");
      assert.ok(chat.startMs <= chat.endMs);
    }
    const usage = (await d.call("GET", `/agents/${lead}`)).body;
    assert.ok(usage, "the lead's view");
    const leadCalls = chats.filter((s) => s.parentSpanId === leadTurn.spanId);
    assert.equal(
      leadTurn.attributes["gen_ai.usage.output_tokens"],
      leadCalls.reduce((sum, s) => sum + (s.attributes["gen_ai.usage.output_tokens"] as number), 0),
      "a turn's usage is the sum of its calls'",
    );

    // Content capture is on in this daemon: prompts, outputs, tool arguments and results.
    assert.equal(
      JSON.parse(leadTurn.attributes["gen_ai.input.messages"] as string)[0].parts[0].content,
      "lead the work",
    );
    assert.match(leadTurn.attributes["gen_ai.output.messages"] as string, /lead done/);
    assert.equal(
      JSON.parse(helperTurn.attributes["gen_ai.input.messages"] as string)[0].parts[0].content,
      "help the lead",
    );
    assert.deepEqual(JSON.parse(writeCall.attributes["gen_ai.tool.call.arguments"] as string), {
      path: "/work/out.txt",
      content: "written",
    });
    assert.match(bashCall.attributes["gen_ai.tool.call.result"] as string, /helped/);
    // Never the daemon's secrets: no attribute names a key or carries a bearer token.
    for (const s of trace) for (const key of Object.keys(s.attributes)) assert.doesNotMatch(key, /key|token\b|secret/i);

    assert.ok(receiver.requests.every((r) => r.path === "/v1/traces" && r.contentType === "application/x-protobuf"));
    assert.ok(
      receiver.requests.every((r) => r.headers["x-tenant"] === "swarm-test"),
      "OTEL_EXPORTER_OTLP_HEADERS apply",
    );
  });

  it("a prompt to a live agent is its next turn's input; a steer is an event on its span", async () => {
    const created = await d.call("POST", "/runs", {
      spec: { name: "idler", script: [{ text: "first" }, { text: "second", delayMs: 1500 }] },
      prompt: "one",
      keepAlive: true,
    });
    const agentId = created.body.rootAgentId as string;
    await d.call("GET", `/agents/${agentId}/result?wait=30`);
    assert.equal((await d.call("POST", `/agents/${agentId}/prompt`, { text: "two" })).status, 202);
    await pollUntil(
      async () => (await d.call("GET", `/agents/${agentId}`)).body.state,
      (state) => state === "running",
      "the second turn never ran",
    );
    const steered = await d.call("POST", `/agents/${agentId}/steer`, { message: "mind the steer" });
    assert.equal(steered.status, 202, JSON.stringify(steered.body));
    await pollUntil(
      async () => (await d.call("GET", `/agents/${agentId}/result?wait=30`)).body.result,
      (text) => text !== "first",
      "the second turn never settled",
    );
    assert.equal((await d.call("POST", `/agents/${agentId}/stop`, {})).status, 202);
    const spans = await spansUntil(
      receiver,
      "the idler's span",
      (all) => byName(all, "create_agent idler").length === 1,
    );
    const turns = byName(spans, "invoke_agent idler").sort(
      (a, b) => (a.attributes["swarmd.turn"] as number) - (b.attributes["swarmd.turn"] as number),
    );
    assert.deepEqual(
      turns.map((t) => t.attributes["swarmd.turn"]),
      [1, 2],
    );
    const input = (t: ReceivedSpan) => JSON.parse(t.attributes["gen_ai.input.messages"] as string)[0].parts[0].content;
    assert.deepEqual(turns.map(input), ["one", "two"]);
    const idler = one(spans, "create_agent idler");
    const steer = idler.events.find((e) => e.name === "agent_steered");
    assert.ok(steer, `a steer event: ${idler.events.map((e) => e.name).join(", ")}`);
    assert.equal(steer.attributes["swarmd.message"], "mind the steer");
    assert.ok(
      steer.atMs >= turns[1]!.startMs && steer.atMs <= turns[1]!.endMs,
      "the steer came during the second turn",
    );
    assert.equal(idler.attributes["swarmd.outcome"], "aborted");
  });
});

describe("traces across a daemon SIGKILL", () => {
  let receiver: OtlpReceiver;
  let dir: string;
  let d: DaemonProcess | undefined;
  before(async () => {
    receiver = await startOtlpReceiver();
    // Short: a process sandbox's socket path must fit in 107 bytes.
    dir = mkdtempSync(join(tmpdir(), "sw-tr-"));
  });
  after(async () => {
    await d?.kill("SIGKILL");
    await receiver?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("spans open at the kill end after the restart in the same tree, with their start times from the ledger; no content without capture", async () => {
    const data = join(dir, "data");
    d = await spawnDaemon(data, otelEnv(receiver));
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "survivor",
        approve: [{ tool: "bash" }],
        script: [{ tool: "bash", args: { command: "echo later" } }, { text: "never" }],
      },
      prompt: "wait for me",
    });
    const runId = created.body.runId as string;
    const agentId = created.body.rootAgentId as string;
    await inbox(d.call, runId, 1);
    const run = await spansUntil(receiver, "the run's span", (all) =>
      all.some((s) => s.attributes["swarmd.run.id"] === runId),
    );
    const runSpan = run.find((s) => s.attributes["swarmd.run.id"] === runId)!;
    const spawnedAt = (await d.call("GET", `/agents/${agentId}`)).body.createdAt as number;
    await d.kill("SIGKILL");
    const afterKill = receiver.spans.length;

    // The simulated runtime's sandboxes end with the daemon: the restarted one finds the agent lost.
    d = await spawnDaemon(data, { ...otelEnv(receiver), SWARM_PORT: new URL(d.url).port });
    const spans = await spansUntil(receiver, "the survivor's span after the restart", (all) =>
      all.slice(afterKill).some((s) => s.name === "create_agent survivor"),
    );
    const agentSpan = one(spans, "create_agent survivor");
    assert.equal(agentSpan.traceId, runSpan.traceId, "the same trace as before the kill");
    assert.equal(agentSpan.parentSpanId, runSpan.spanId, "under the run's span exported before the kill");
    assert.equal(agentSpan.startMs, spawnedAt, "its start is the agent_spawned time from the ledger");
    assert.equal(agentSpan.attributes["swarmd.outcome"], "lost");
    assert.equal(agentSpan.status.code, 2, "a lost agent's span is an error");
    assert.ok(
      agentSpan.events.some((e) => e.name === "permission_request"),
      "events from before the kill are kept",
    );
    const turn = one(spans, "invoke_agent survivor");
    assert.equal(turn.parentSpanId, agentSpan.spanId);
    assert.ok(turn.startMs < agentSpan.endMs && turn.startMs >= spawnedAt, "the turn started before the kill");
    assert.equal(turn.status.code, 2);
    const tool = one(spans, "execute_tool bash");
    assert.equal(tool.parentSpanId, turn.spanId);
    assert.equal(tool.status.code, 2, "a tool call cut short by the loss");
    // No content without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.
    for (const s of spans) {
      for (const key of [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
      ])
        assert.equal(s.attributes[key], undefined, `${s.name} carries no ${key}`);
      for (const e of s.events) assert.equal(e.attributes["swarmd.args"], undefined);
    }
    // Nothing exported twice: spans that ended before the kill are not sent again.
    assert.equal(byName(spans, "swarmd.run").filter((s) => s.traceId === runSpan.traceId).length, 1);

    // The daemon's log line about the loss names the run's trace and the agent's span.
    const line = d
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => typeof l.msg === "string" && l.msg.includes(`agent ${agentId} ended lost`));
    assert.ok(line, `a log line about the lost agent: ${d.output()}`);
    assert.equal(line.trace_id, runSpan.traceId);
    assert.equal(line.span_id, agentSpan.spanId);
    await d.kill("SIGKILL");
  });

  it("an agent that outlives the kill (process sandbox) finishes its turn after the restart: the turn and tool spans start before it", async () => {
    const data = join(dir, "p");
    const env = { ...otelEnv(receiver), SWARM_RUNTIME: "process" };
    d = await spawnDaemon(data, env);
    const runtime = createProcessRuntime({ dataDir: data, logger: { info: () => undefined, warn: () => undefined } });
    try {
      const created = await d.call("POST", "/runs", {
        spec: {
          name: "outliver",
          approve: [{ tool: "bash" }],
          script: [{ tool: "bash", args: { command: "echo after-restart" } }, { text: "{{lastToolResult}}" }],
        },
        prompt: "go",
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const runId = created.body.runId as string;
      const agentId = created.body.rootAgentId as string;
      const [request] = await inbox(d.call, runId, 1);
      const killedAt = Date.now();
      await d.kill("SIGKILL");
      d = await spawnDaemon(data, { ...env, SWARM_PORT: new URL(d.url).port });
      const allowed = await d.call("POST", `/agents/${agentId}/permissions/${request.requestId}`, {
        decision: "allow",
      });
      assert.equal(allowed.status, 202, JSON.stringify(allowed.body));
      assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result.trim(), "after-restart");
      const spans = await spansUntil(receiver, "the outliver's span", (all) =>
        all.some((s) => s.name === "create_agent outliver"),
      );
      const agentSpan = one(spans, "create_agent outliver");
      const turn = one(spans, "invoke_agent outliver");
      const tool = one(spans, "execute_tool bash", agentId);
      assert.equal(turn.parentSpanId, agentSpan.spanId);
      assert.equal(tool.parentSpanId, turn.spanId);
      assert.ok(turn.startMs < killedAt && turn.endMs > killedAt, "the turn spans the kill");
      assert.ok(tool.startMs < killedAt && tool.endMs > killedAt, "so does the held tool call");
      assert.equal(turn.status.code, 1, "and it succeeded");
      assert.equal(tool.status.code, 1);
      assert.equal(agentSpan.attributes["swarmd.outcome"], "success");
      const names = agentSpan.events.map((e) => e.name);
      assert.ok(names.indexOf("permission_request") < names.indexOf("permission_resolved"), names.join(", "));
    } finally {
      await d?.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000));
    }
  });
});
