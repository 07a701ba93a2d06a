/**
 * The request examples of `GET /openapi.json` work: every request body of the document has
 * examples, each one parses with the route's own schema, and each, sent as it is to a live daemon
 * (its example ids swapped for those of a live run, as a `/docs` user fills in the path), answers
 * 2xx. What the document offers in "Try it out" is a request that succeeds.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EXAMPLE_CHILD_ID, EXAMPLE_IDS } from "../../src/api/fields.ts";
import { OPERATIONS } from "../../src/api/operations.ts";
import type { JsonObject, OpenApiDocument } from "../../src/http/openapi/openapi-document.ts";
import { inbox, startGatedRun } from "../support/approval-runs.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";

interface Example {
  operationId: string;
  method: string;
  path: string;
  name: string;
  value: unknown;
}

/** Ids of a live run that an example is sent to, in place of `EXAMPLE_IDS`. */
interface Live {
  runId: string;
  agentId: string;
  requestId: string;
  /** A fork child of `agentId`, for an adopt. */
  childId: string;
}

describe("every request example of /openapi.json succeeds against a live daemon", () => {
  let d: Daemon;
  let doc: OpenApiDocument;
  before(async () => {
    d = await startDaemon();
    doc = (await d.call("GET", "/openapi.json")).body;
  });
  after(() => d.stop());

  const examples = (): Example[] =>
    Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, operation]) => {
        const content = (operation.requestBody as JsonObject | undefined)?.content as
          | Record<string, { examples?: Record<string, { value: unknown }> }>
          | undefined;
        if (content === undefined) return [];
        const named = content["application/json"]?.examples ?? {};
        assert.ok(Object.keys(named).length > 0, `${method.toUpperCase()} ${path} has a request body and no example`);
        return Object.entries(named).map(([name, { value }]) => ({
          operationId: String(operation.operationId),
          method,
          path,
          name,
          value,
        }));
      }),
    );

  /** A live keepAlive root, in the state the operation acts on; an approval request waits where it answers one. */
  async function liveFor(operationId: string): Promise<Live> {
    if (operationId === "resolvePermission") {
      const run = await startGatedRun(d.call, {
        approve: [{ tool: "spawn_agent" }],
        script: [{ tool: "spawn_agent", args: { spec: { name: "kid", script: [] } } }, { text: "done" }],
      });
      const [request] = await inbox(d.call, run.runId, 1);
      return { ...run, requestId: request.requestId, childId: EXAMPLE_CHILD_ID };
    }
    // A wait's examples find the agent settled; an adopt's, a fork child of it with a change.
    const prompted = operationId === "waitForAgents" || operationId === "adoptChanges";
    const created = await d.call("POST", "/runs", {
      spec: { name: "target", script: [] },
      keepAlive: true,
      ...(prompted ? { prompt: "go" } : {}),
    });
    const live: Live = {
      runId: created.body.runId,
      agentId: created.body.rootAgentId,
      requestId: EXAMPLE_IDS.requestId,
      childId: EXAMPLE_CHILD_ID,
    };
    await waitForState(d, live.agentId, "running");
    if (prompted) await d.call("GET", `/agents/${live.agentId}/result?wait=60`);
    if (operationId === "adoptChanges") {
      const forked = await d.call("POST", `/agents/${live.agentId}/fork`, {
        prompts: ["change a file"],
        spec: { script: [{ tool: "bash", args: { command: "echo changed > /work/changed.txt" } }, { text: "done" }] },
      });
      live.childId = forked.body.agentIds[0];
      await d.call("GET", `/agents/${live.childId}/result?wait=60`);
    }
    if (operationId === "resumeAgent") {
      assert.equal((await d.call("POST", `/agents/${live.agentId}/pause`)).status, 202);
    }
    return live;
  }

  /** The example with the live ids in place of the example ones, wherever they appear. */
  const withIds = (text: string, live: Live) =>
    text
      .replaceAll(EXAMPLE_IDS.runId, live.runId)
      .replaceAll(EXAMPLE_IDS.agentId, live.agentId)
      .replaceAll(EXAMPLE_IDS.requestId, live.requestId)
      .replaceAll(EXAMPLE_CHILD_ID, live.childId);

  it("every operation with a body offers examples, and each parses with the route's own schema", () => {
    const all = examples();
    const withBody = OPERATIONS.filter((op) => op.body !== undefined).map((op) => op.operationId);
    assert.deepEqual([...new Set(all.map((e) => e.operationId))].sort(), withBody.sort());
    assert.ok(all.length >= 15, `${all.length} examples`);
    for (const example of all) {
      const body = OPERATIONS.find((op) => op.operationId === example.operationId)?.body;
      const parsed = body?.schema.safeParse(example.value);
      assert.ok(parsed?.success, `${example.operationId} ${example.name}: ${parsed?.error?.message}`);
    }
    // The path parameters carry the same example ids, so "Try it out" fills in a well-formed path.
    const parameters = Object.values(doc.paths).flatMap((methods) =>
      Object.values(methods).flatMap((operation) => (operation.parameters ?? []) as Json[]),
    );
    for (const parameter of parameters.filter((p) => p.in === "path" && p.name in EXAMPLE_IDS))
      assert.equal(parameter.example, EXAMPLE_IDS[parameter.name as keyof typeof EXAMPLE_IDS]);
  });

  it("each example, sent with a live run's ids, answers 2xx", async () => {
    const sent: string[] = [];
    for (const example of examples()) {
      const live = await liveFor(example.operationId);
      const path = example.path.replace(/\{(\w+)\}/g, (_, name: string) => live[name as keyof Live] ?? name);
      const body = JSON.parse(withIds(JSON.stringify(example.value), live));
      const answer = await d.call(example.method.toUpperCase(), path, body);
      assert.ok(
        answer.status >= 200 && answer.status < 300,
        `${example.method.toUpperCase()} ${example.path} example "${example.name}": ${answer.status} ${JSON.stringify(answer.body)}`,
      );
      sent.push(`${example.operationId}:${example.name}`);
      // Runs end here: nothing of one example reaches the next.
      await d.call("DELETE", `/runs/${answer.body?.runId ?? live.runId}`);
      if (answer.body?.runId && answer.body.runId !== live.runId) await d.call("DELETE", `/runs/${live.runId}`);
    }
    for (const wanted of [
      "createRun:scripted",
      "createRun:model",
      "spawnAgent:scripted",
      "setBudget:caps",
      "stopAgent:drain",
    ])
      assert.ok(sent.includes(wanted), `${wanted} was sent`);
  });
});
