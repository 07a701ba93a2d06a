/**
 * The document against a live daemon: every operation of `GET /openapi.json` is called with valid
 * requests and with invalid ones, and each answer must carry a documented status and a body that
 * the documented schema accepts (JSON Schema, as any client reads it) and that the zod schema it
 * was generated from parses (so the answer schemas of `src/api/` cannot drift from what the daemon sends).
 * Scripted agents on the process runtime (or `SWARM_E2E_RUNTIME`).
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { OPERATIONS } from "../../src/api/operations.ts";
import { CONSOLE_DIR } from "../../src/http/console-page.ts";
import type { JsonObject, OpenApiDocument } from "../../src/http/openapi/openapi-document.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";
import { openEvents } from "../support/sse-client.ts";

const TOKEN = "contract-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const NO_RUN = "r_00000000000000ff";
const NO_AGENT = "a_00000000000000ff";
const MCP_INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "contract", version: "1" } },
};
const MCP_LIST = { jsonrpc: "2.0", id: 2, method: "tools/list" };
/** What MCP clients send: an answer as a stream rather than JSON. */
const MCP_ACCEPT = "application/json, text/event-stream";

interface Call {
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: unknown;
  /** A body sent as is, with its content type. */
  raw?: { type: string; payload: string };
  headers?: Record<string, string>;
  /** Leave out the bearer token. */
  anonymous?: true;
}
interface Answer {
  status: number;
  type: string;
  text: string;
}
/** One request of a case and the status it must answer. */
interface Step {
  what: string;
  call: () => Call;
  status: number;
}

function send(base: string, call: Call): Promise<Answer> {
  const payload = call.raw?.payload ?? (call.body === undefined ? undefined : JSON.stringify(call.body));
  const headers = {
    ...(payload === undefined ? {} : { "content-type": call.raw?.type ?? "application/json" }),
    ...(call.anonymous ? {} : AUTH),
    ...call.headers,
  };
  return new Promise((resolve, reject) => {
    const req = request(`${base}${call.path}`, { method: call.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers["content-type"] ?? ""),
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    req.on("error", reject);
    req.end(payload);
  });
}

describe("every operation of /openapi.json answers as documented (live daemon)", () => {
  let d: Daemon;
  let doc: OpenApiDocument;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validators = new Map<string, ValidateFunction>();
  /** The ids the cases use, filled as the walk goes. */
  const ids = {
    runId: "",
    rootId: "",
    childId: "",
    requestId: "",
    idleId: "",
    idleRunId: "",
    forkId: "",
    mcpSession: "",
  };

  before(async () => {
    d = await startDaemon({ token: TOKEN, bodyLimitBytes: 64 * 1024 });
    doc = JSON.parse((await send(d.url, { method: "GET", path: "/openapi.json" })).text);
    ajv.addSchema({ $id: "swarmd:openapi", components: doc.components });
    // The run most cases act on: a keepAlive root whose bash call waits for an approval.
    const created = await d.call(
      "POST",
      "/runs",
      {
        spec: {
          name: "gated",
          approve: [{ tool: "bash" }],
          script: [{ tool: "bash", args: { command: "echo hi" } }, { text: "done" }],
        },
        prompt: "go",
        keepAlive: true,
      },
      AUTH,
    );
    assert.equal(created.status, 202, JSON.stringify(created.body));
    ids.runId = created.body.runId;
    ids.rootId = created.body.rootAgentId;
    const inbox = await pollUntil(
      async () => (await d.call("GET", `/runs/${ids.runId}/permissions`, undefined, AUTH)).body.permissions as Json[],
      (list) => list.length === 1,
      "approval request",
    );
    ids.requestId = inbox[0].requestId;
  });
  after(() => d.stop());

  const schemaFor = (ref: string): ValidateFunction => {
    let validate = validators.get(ref);
    if (validate === undefined) {
      validate = ajv.compile({ $ref: `swarmd:openapi${ref}` });
      validators.set(ref, validate);
    }
    return validate;
  };
  const conforms = (ref: string, value: unknown, what: string) => {
    const validate = schemaFor(ref);
    assert.ok(
      validate(value),
      `${what}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(value).slice(0, 2000)}`,
    );
  };

  /** The answer is documented for the operation, and its body is what the document says. */
  function checkAnswer(operationId: string, what: string, answer: Answer): void {
    const [path, method, operation] = findOperation(doc, operationId);
    const label = `${method.toUpperCase()} ${path} (${what})`;
    const responses = operation.responses as Record<string, { content?: Record<string, { schema: JsonObject }> }>;
    const documented = responses[String(answer.status)];
    assert.ok(
      documented,
      `${label} answered ${answer.status}, documented: ${Object.keys(responses).join(", ")}; body ${answer.text.slice(0, 300)}`,
    );
    if (documented.content === undefined) {
      assert.equal(answer.text, "", `${label}: no body documented`);
      return;
    }
    const media = Object.keys(documented.content).find((type) => type === "*/*" || answer.type.startsWith(type));
    assert.ok(
      media,
      `${label}: content-type ${answer.type} is not one of ${Object.keys(documented.content).join(", ")}`,
    );
    const schema = documented.content[media]?.schema ?? {};
    if (media !== "application/json") return;
    const body: unknown = JSON.parse(answer.text);
    if (typeof schema.$ref === "string") conforms(schema.$ref, body, label);
    else assert.equal(typeof body, schema.type, label);
    const zod = OPERATIONS.find((o) => o.operationId === operationId)?.ok[answer.status];
    if (zod !== undefined && "json" in zod) {
      const parsed = zod.json.safeParse(body);
      assert.ok(parsed.success, `${label}: ${parsed.error?.message}`);
    }
  }

  const json = (method: Call["method"], path: string, body?: unknown): Call => ({ method, path, body });
  /** A request of the MCP session the case opened. */
  const mcpCall = (method: Call["method"], body?: unknown): Call => ({
    ...json(method, "/mcp", body),
    headers: { "mcp-session-id": ids.mcpSession, "mcp-protocol-version": "2025-11-25" },
  });
  /** A new MCP session's id, from the answer to its initialize. */
  const openMcpSession = async (): Promise<string> => {
    const answer = await fetch(`${d.url}/mcp`, {
      method: "POST",
      headers: { ...AUTH, "content-type": "application/json" },
      body: JSON.stringify(MCP_INITIALIZE),
    });
    await answer.text();
    return answer.headers.get("mcp-session-id") ?? "";
  };
  const at =
    (path: () => string, method: Call["method"] = "GET", body?: unknown) =>
    () =>
      json(method, path(), body);

  /** Per operation, in the order they run: each case's steps, valid and invalid. */
  const CASES: Array<[operationId: string, steps: Step[], prepare?: () => Promise<void>]> = [
    ["getHealth", [{ what: "valid", call: at(() => "/health"), status: 200 }]],
    ["getOpenApiDocument", [{ what: "valid", call: at(() => "/openapi.json"), status: 200 }]],
    ["getMetrics", [{ what: "valid", call: at(() => "/metrics"), status: 200 }]],
    ["getDocsPage", [{ what: "valid", call: at(() => "/docs"), status: 200 }]],
    [
      "getDocsAsset",
      [
        { what: "valid", call: at(() => "/docs/swagger-ui-bundle.js"), status: 200 },
        { what: "unknown file", call: at(() => "/docs/nope.js"), status: 404 },
      ],
    ],
    ["getConsole", [{ what: "valid", call: at(() => "/"), status: 200 }]],
    [
      "getConsoleAsset",
      [
        {
          what: "valid",
          call: at(() => `/console/${readdirSync(CONSOLE_DIR).find((name) => name.endsWith(".js")) ?? "missing.js"}`),
          status: 200,
        },
        { what: "unknown file", call: at(() => "/console/nope.js"), status: 404 },
      ],
    ],
    [
      "createRun",
      [
        {
          what: "valid",
          call: at(() => "/runs", "POST", { spec: { name: "x", script: [{ text: "hi" }] }, prompt: "hi" }),
          status: 202,
        },
        { what: "neither model nor script", call: at(() => "/runs", "POST", { spec: { name: "x" } }), status: 400 },
        {
          what: "malformed JSON",
          call: () => ({ method: "POST", path: "/runs", raw: { type: "application/json", payload: "{" } }),
          status: 400,
        },
        {
          what: "text/plain",
          call: () => ({ method: "POST", path: "/runs", raw: { type: "text/plain", payload: "hi" } }),
          status: 415,
        },
        {
          what: "too large",
          call: at(() => "/runs", "POST", { spec: { name: "x", script: [{ text: "x".repeat(80 * 1024) }] } }),
          status: 413,
        },
      ],
    ],
    [
      "listRuns",
      [
        { what: "valid", call: at(() => "/runs?limit=10"), status: 200 },
        { what: "limit 0", call: at(() => "/runs?limit=0"), status: 400 },
      ],
    ],
    [
      "getRun",
      [
        { what: "valid", call: at(() => `/runs/${ids.runId}`), status: 200 },
        { what: "unknown run", call: at(() => `/runs/${NO_RUN}`), status: 404 },
        { what: "malformed id", call: at(() => "/runs/nope"), status: 404 },
      ],
    ],
    [
      "getRunTimeline",
      [
        { what: "valid", call: at(() => `/runs/${ids.runId}/timeline`), status: 200 },
        { what: "unknown run", call: at(() => `/runs/${NO_RUN}/timeline`), status: 404 },
        { what: "malformed id", call: at(() => "/runs/nope/timeline"), status: 404 },
      ],
    ],
    [
      "streamRunEvents",
      [
        {
          what: "malformed Last-Event-ID",
          call: () => ({ method: "GET", path: `/runs/${ids.runId}/events`, headers: { "last-event-id": "x" } }),
          status: 400,
        },
        { what: "malformed lastEventId", call: at(() => `/runs/${ids.runId}/events?lastEventId=-1`), status: 400 },
        { what: "unknown run", call: at(() => `/runs/${NO_RUN}/events`), status: 404 },
      ],
    ],
    [
      "listPermissions",
      [
        { what: "valid", call: at(() => `/runs/${ids.runId}/permissions?state=all`), status: 200 },
        { what: "bad state", call: at(() => `/runs/${ids.runId}/permissions?state=maybe`), status: 400 },
        { what: "unknown run", call: at(() => `/runs/${NO_RUN}/permissions`), status: 404 },
      ],
    ],
    [
      "spawnAgent",
      [
        {
          what: "valid",
          call: () =>
            json("POST", `/runs/${ids.runId}/agents`, {
              parentAgentId: ids.rootId,
              spec: { name: "child", script: [{ text: "child done" }] },
              prompt: "go",
            }),
          status: 202,
        },
        {
          what: "unknown field",
          call: () =>
            json("POST", `/runs/${ids.runId}/agents`, {
              parentAgentId: ids.rootId,
              spec: { name: "c", script: [] },
              colour: "red",
            }),
          status: 400,
        },
        {
          what: "unknown parent",
          call: at(() => `/runs/${ids.runId}/agents`, "POST", {
            parentAgentId: NO_AGENT,
            spec: { name: "c", script: [] },
          }),
          status: 404,
        },
      ],
    ],
    [
      "getResult",
      [
        { what: "valid, settled", call: at(() => `/agents/${ids.childId}/result?wait=60`), status: 200 },
        { what: "valid, pending", call: at(() => `/agents/${ids.rootId}/result`), status: 202 },
        { what: "wait too long", call: at(() => `/agents/${ids.rootId}/result?wait=241`), status: 400 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/result`), status: 404 },
      ],
    ],
    [
      "getAgent",
      [
        { what: "valid", call: at(() => `/agents/${ids.rootId}`), status: 200 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}`), status: 404 },
      ],
    ],
    [
      "getAgentMachine",
      [
        { what: "valid", call: at(() => `/agents/${ids.rootId}/machine`), status: 200 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/machine`), status: 404 },
      ],
    ],
    [
      "setBudget",
      [
        {
          what: "valid",
          call: at(() => `/agents/${ids.rootId}/budget`, "POST", { maxTokens: 10_000_000 }),
          status: 200,
        },
        { what: "no cap named", call: at(() => `/agents/${ids.rootId}/budget`, "POST", {}), status: 400 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/budget`, "POST", { maxTokens: 1 }), status: 404 },
      ],
    ],
    [
      "promptAgent",
      [
        { what: "valid", call: at(() => `/agents/${ids.rootId}/prompt`, "POST", { text: "more" }), status: 202 },
        { what: "empty text", call: at(() => `/agents/${ids.rootId}/prompt`, "POST", { text: "" }), status: 400 },
        { what: "ended agent", call: at(() => `/agents/${ids.childId}/prompt`, "POST", { text: "more" }), status: 409 },
      ],
      // The child settled its one turn (getResult); it is done once its end is recorded.
      () => waitForState(d, ids.childId, "done", 60_000, AUTH),
    ],
    [
      "steerAgent",
      [
        { what: "valid", call: at(() => `/agents/${ids.rootId}/steer`, "POST", { message: "steer" }), status: 202 },
        {
          what: "bad scope",
          call: at(() => `/agents/${ids.rootId}/steer`, "POST", { message: "steer", scope: "tree" }),
          status: 400,
        },
        {
          what: "ended agent",
          call: at(() => `/agents/${ids.childId}/steer`, "POST", { message: "steer" }),
          status: 409,
        },
      ],
    ],
    [
      "pauseAgent",
      [
        { what: "valid, no body", call: at(() => `/agents/${ids.rootId}/pause`, "POST"), status: 202 },
        { what: "bad scope", call: at(() => `/agents/${ids.rootId}/pause`, "POST", { scope: "tree" }), status: 400 },
        { what: "ended agent", call: at(() => `/agents/${ids.childId}/pause`, "POST"), status: 409 },
      ],
    ],
    [
      "resumeAgent",
      [
        { what: "valid", call: at(() => `/agents/${ids.rootId}/resume`, "POST", { scope: "subtree" }), status: 202 },
        { what: "not paused", call: at(() => `/agents/${ids.rootId}/resume`, "POST"), status: 409 },
      ],
    ],
    [
      "resolvePermission",
      [
        {
          what: "bad decision",
          call: at(() => `/agents/${ids.rootId}/permissions/${ids.requestId}`, "POST", { decision: "maybe" }),
          status: 400,
        },
        {
          what: "valid",
          call: at(() => `/agents/${ids.rootId}/permissions/${ids.requestId}`, "POST", { decision: "allow" }),
          status: 202,
        },
        {
          what: "already resolved",
          call: at(() => `/agents/${ids.rootId}/permissions/${ids.requestId}`, "POST", { decision: "deny" }),
          status: 409,
        },
        {
          what: "unknown request",
          call: at(() => `/agents/${ids.rootId}/permissions/p_00000000000000ff`, "POST", { decision: "allow" }),
          status: 404,
        },
      ],
    ],
    [
      "stopAgent",
      [
        {
          what: "drainTimeoutMs with abort",
          call: at(() => `/agents/${ids.rootId}/stop`, "POST", { drainTimeoutMs: 5_000 }),
          status: 400,
        },
        {
          what: "valid",
          call: at(() => `/agents/${ids.rootId}/stop`, "POST", { mode: "drain", scope: "subtree" }),
          status: 202,
        },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/stop`, "POST"), status: 404 },
      ],
    ],
    [
      "forkAgent",
      [
        {
          what: "valid",
          call: at(() => `/agents/${ids.idleId}/fork`, "POST", {
            prompts: ["try"],
            spec: { script: [{ tool: "bash", args: { command: "echo tried > /work/t.txt" } }, { text: "tried" }] },
          }),
          status: 202,
        },
        { what: "no prompt", call: at(() => `/agents/${ids.idleId}/fork`, "POST", { prompts: [] }), status: 400 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/fork`, "POST", { prompts: ["x"] }), status: 404 },
        { what: "in a turn", call: at(() => `/agents/${ids.rootId}/fork`, "POST", { prompts: ["x"] }), status: 409 },
      ],
      // An agent between turns to fork: idle after its one turn.
      async () => {
        const created = await d.call(
          "POST",
          "/runs",
          { spec: { name: "idle", script: [{ text: "ready" }] }, prompt: "go", keepAlive: true },
          AUTH,
        );
        ids.idleRunId = created.body.runId;
        ids.idleId = created.body.rootAgentId;
        await d.call("GET", `/agents/${ids.idleId}/result?wait=60`, undefined, AUTH);
      },
    ],
    [
      "waitForAgents",
      [
        {
          what: "valid",
          call: () =>
            json("POST", `/runs/${ids.idleRunId}/wait`, { agentIds: [ids.forkId], mode: "first", timeoutMs: 60_000 }),
          status: 200,
        },
        { what: "no agent", call: at(() => `/runs/${ids.idleRunId}/wait`, "POST", { agentIds: [] }), status: 400 },
        { what: "unknown run", call: at(() => `/runs/${NO_RUN}/wait`, "POST", { agentIds: [NO_AGENT] }), status: 404 },
      ],
    ],
    [
      "getChanges",
      [
        { what: "valid", call: at(() => `/agents/${ids.forkId}/changes`), status: 200 },
        { what: "not a fork", call: at(() => `/agents/${ids.idleId}/changes`), status: 409 },
        { what: "unknown agent", call: at(() => `/agents/${NO_AGENT}/changes`), status: 404 },
      ],
    ],
    [
      "adoptChanges",
      [
        { what: "valid", call: () => json("POST", `/agents/${ids.idleId}/adopt`, { from: ids.forkId }), status: 200 },
        {
          what: "not a child",
          call: () => json("POST", `/agents/${ids.idleId}/adopt`, { from: ids.idleId }),
          status: 400,
        },
        {
          what: "unknown agent",
          call: () => json("POST", `/agents/${NO_AGENT}/adopt`, { from: ids.forkId }),
          status: 404,
        },
      ],
    ],
    [
      "listModels",
      [
        { what: "valid", call: at(() => "/models"), status: 200 },
        {
          what: "one provider's, with a key",
          call: at(() => "/models?provider=anthropic&available=true"),
          status: 200,
        },
        { what: "bad available", call: at(() => "/models?available=yes"), status: 400 },
        { what: "empty provider", call: at(() => "/models?provider="), status: 400 },
      ],
    ],
    ["listNodes", [{ what: "valid", call: at(() => "/nodes"), status: 200 }]],
    [
      "postMcp",
      [
        { what: "valid, initialize, in JSON", call: at(() => "/mcp", "POST", MCP_INITIALIZE), status: 200 },
        {
          what: "valid, initialize, as a stream",
          call: () => ({ ...json("POST", "/mcp", MCP_INITIALIZE), headers: { accept: MCP_ACCEPT } }),
          status: 200,
        },
        {
          what: "valid, a notification",
          call: () => mcpCall("POST", { jsonrpc: "2.0", method: "notifications/initialized" }),
          status: 202,
        },
        { what: "not JSON-RPC", call: at(() => "/mcp", "POST", { jsonrpc: "1.0" }), status: 400 },
        { what: "no session", call: at(() => "/mcp", "POST", MCP_LIST), status: 400 },
        {
          what: "unknown session",
          call: () => ({ ...json("POST", "/mcp", MCP_LIST), headers: { "mcp-session-id": "nope" } }),
          status: 404,
        },
        {
          what: "foreign Origin",
          call: () => ({ ...json("POST", "/mcp", MCP_INITIALIZE), headers: { origin: "http://evil.example" } }),
          status: 403,
        },
        {
          what: "Accept text/html",
          call: () => ({ ...json("POST", "/mcp", MCP_INITIALIZE), headers: { accept: "text/html" } }),
          status: 406,
        },
      ],
      async () => {
        ids.mcpSession = await openMcpSession();
      },
    ],
    [
      "deleteMcp",
      [
        { what: "valid", call: () => mcpCall("DELETE"), status: 200 },
        { what: "deleted session", call: () => mcpCall("DELETE"), status: 404 },
        { what: "no session", call: at(() => "/mcp", "DELETE"), status: 400 },
      ],
      async () => {
        ids.mcpSession = await openMcpSession();
      },
    ],
    // Always 405 (no standalone stream): the one operation without a request that succeeds.
    ["getMcp", [{ what: "no stream", call: at(() => "/mcp"), status: 405 }]],
    [
      "deleteRun",
      [
        { what: "bad purge", call: at(() => `/runs/${ids.runId}?purge=maybe`, "DELETE"), status: 400 },
        { what: "valid", call: at(() => `/runs/${ids.runId}`, "DELETE"), status: 204 },
        { what: "valid, purge", call: at(() => `/runs/${ids.runId}?purge=true`, "DELETE"), status: 204 },
        { what: "purged", call: at(() => `/runs/${ids.runId}`, "DELETE"), status: 404 },
      ],
    ],
  ];

  it("has a case for every operation of the document, each with a valid request", () => {
    const documented = Object.values(doc.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => String(operation.operationId)),
    );
    assert.deepEqual(CASES.map(([id]) => id).sort(), documented.sort());
    // The stream's valid request is `checkStream`, and GET /mcp is always a 405; every case also sends a foreign Host (and, where the token is wanted, none).
    for (const [id, steps] of CASES)
      if (id !== "streamRunEvents" && id !== "getMcp")
        assert.ok(
          steps.some((step) => step.status < 300),
          `${id}: no valid request`,
        );
  });

  for (const [operationId, steps, prepare] of CASES) {
    it(`${operationId}: answers documented statuses with documented bodies`, async () => {
      const [, , operation] = findOperation(doc, operationId);
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      const first = steps[0];
      assert.ok(first);
      // Every route refuses a host it does not serve, and every route but the open ones a caller without the token.
      const refusedHost = await send(d.url, {
        ...first.call(),
        headers: { ...first.call().headers, host: "evil.example" },
      });
      assert.equal(refusedHost.status, 403);
      checkAnswer(operationId, "foreign Host", refusedHost);
      if (!open) {
        const anonymous = await send(d.url, { ...first.call(), anonymous: true });
        assert.equal(anonymous.status, 401);
        checkAnswer(operationId, "no token", anonymous);
      }
      await prepare?.();
      if (operationId === "streamRunEvents") await checkStream(operationId);
      for (const step of steps) {
        const answer = await send(d.url, step.call());
        assert.equal(answer.status, step.status, `${operationId} (${step.what}): ${answer.text.slice(0, 300)}`);
        checkAnswer(operationId, step.what, answer);
        if (operationId === "spawnAgent" && step.what === "valid") ids.childId = JSON.parse(answer.text).agentId;
        if (operationId === "forkAgent" && step.what === "valid") ids.forkId = JSON.parse(answer.text).agentIds[0];
        if (operationId === "pauseAgent" && step.what.startsWith("valid"))
          assert.equal(JSON.parse(answer.text).results[0].outcome, "applied");
      }
    });
  }

  /** The stream: 200 `text/event-stream`, and every message one the document's `StreamMessage` accepts. */
  async function checkStream(operationId: string): Promise<void> {
    const stream = await openEvents(d.url, ids.runId, { token: TOKEN });
    try {
      assert.equal(stream.status, 200);
      checkAnswer(operationId, "valid", {
        status: 200,
        type: String(stream.response.headers["content-type"]),
        text: "",
      });
      await stream.waitFor((m) => m.event === "permission_request");
      const [, , operation] = findOperation(doc, operationId);
      const item = (operation.responses as Json)["200"].content["text/event-stream"]["x-item-schema"].$ref as string;
      for (const message of stream.messages) {
        const { id, ...rest } = message;
        conforms(item, id === undefined ? rest : { id: String(id), ...rest }, `event ${message.event}`);
      }
      assert.deepEqual(
        stream.messages.slice(0, 2).map((m) => m.event),
        ["run_started", "agent_spawned"],
      );
    } finally {
      stream.close();
    }
  }
});

function findOperation(
  doc: OpenApiDocument,
  operationId: string,
): [path: string, method: string, operation: JsonObject] {
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods))
      if (operation.operationId === operationId) return [path, method, operation];
  }
  throw new Error(`no operation ${operationId} in the document`);
}
