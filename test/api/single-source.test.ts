/**
 * One declaration per API shape (src/api/): the schema an operation names is the one its route
 * parses with and the one the document shows, and each bridge tool is made from the route it
 * calls. Each test fails when a second declaration creeps back: a route parsing with a schema of
 * its own, a document naming another, a tool input written by hand or a tool calling elsewhere.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { bodyObject, type Operation, paramNames } from "../../src/api/operation.ts";
import { OPERATIONS } from "../../src/api/operations.ts";
import { routeTool } from "../../src/api/route-tool.ts";
import { withRules } from "../../src/api/rules.ts";
import { ROUTE_TOOLS, type RouteToolName } from "../../src/api/tools.ts";
import { createBridgeServer } from "../../src/bridge/bridge-server.ts";
import { createSpecStore } from "../../src/client/spec-store.ts";
import { createSwarmClient } from "../../src/client/swarm-client.ts";
import type { OpenApiDocument } from "../../src/http/openapi/openapi-document.ts";
import { tempDir } from "../cli/helpers.ts";
import { PERMISSION, RUN_ID, setup } from "../http/fakes.ts";
import type { Json } from "../support/daemon.ts";

type JsonObject = Record<string, unknown>;
const IDS: Record<string, string> = { runId: RUN_ID, agentId: "a_1", requestId: PERMISSION.requestId };
/** `/agents/{agentId}` with the fakes' ids: the URL of an operation. */
const urlOf = (op: Operation) => op.path.replace(/\{(\w+)\}/g, (_, name: string) => IDS[name] ?? "x");
/** Fastify's form of an operation's path. */
const routeOf = (op: Operation) => `${op.method.toUpperCase()} ${op.path.replace(/\{(\w+)\}/g, ":$1")}`;
const json = (schema: z.ZodType, io: "input" | "output" = "input") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonObject;
/** A field's JSON Schema as a check reads it: no words, no default, no dialect. */
function bare(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(bare);
  if (typeof schema !== "object" || schema === null) return schema;
  const skipped = new Set(["description", "default", "$schema", "$id"]);
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => !skipped.has(key))
      .map(([key, value]) => [key, bare(value)]),
  );
}

describe("routes parse with the schemas of their operations", () => {
  it("each request reaches the safeParse of exactly the body, query and header schemas its operation names", async (t) => {
    const { app } = setup();
    t.after(() => app.close());
    const seen = new Set<z.ZodType>();
    const spied = new Map<z.ZodType, z.ZodType["safeParse"]>();
    const spy = (schema: z.ZodType) => {
      if (spied.has(schema)) return;
      const original = schema.safeParse;
      spied.set(schema, original);
      schema.safeParse = ((value: unknown, params?: never) => {
        seen.add(schema);
        return original(value, params);
      }) as z.ZodType["safeParse"];
    };
    t.after(() => {
      for (const [schema, original] of spied) schema.safeParse = original;
    });
    const named = (op: Operation): z.ZodType[] => [
      ...(op.body ? [op.body.schema] : []),
      ...(op.query ? [op.query] : []),
      ...Object.values(op.headers ?? {}).map((header) => header.schema),
    ];
    for (const op of OPERATIONS) for (const schema of named(op)) spy(schema);

    const checked = OPERATIONS.filter((op) => named(op).length > 0);
    assert.ok(checked.length >= 12, `${checked.length} operations take a body, query or header`);
    for (const op of checked) {
      // One request per schema; a query or header value is invalid, so that no stream opens.
      const requests: Array<{ schema: z.ZodType; query?: string; headers?: Record<string, string>; payload?: string }> =
        [
          ...(op.body
            ? [{ schema: op.body.schema, headers: { "content-type": "application/json" }, payload: "{}" }]
            : []),
          ...(op.query ? [{ schema: op.query, query: `?${Object.keys(op.query.shape)[0]}=x` }] : []),
          ...Object.entries(op.headers ?? {}).map(([name, header]) => ({
            schema: header.schema,
            headers: { [name]: "x" },
          })),
        ];
      for (const request of requests) {
        seen.clear();
        await app.inject({
          method: op.method.toUpperCase() as "GET",
          url: `${urlOf(op)}${request.query ?? ""}`,
          headers: request.headers ?? {},
          ...(request.payload === undefined ? {} : { payload: request.payload }),
        });
        const what = request.payload !== undefined ? "body" : (request.query ?? JSON.stringify(request.headers));
        assert.ok(seen.has(request.schema), `${routeOf(op)} did not parse its ${what} with its operation's schema`);
        for (const schema of seen)
          assert.ok(named(op).includes(schema), `${routeOf(op)} parsed with the schema of another operation`);
      }
    }
  });

  it("the document shows, for each operation, the body and query members of its schemas", async (t) => {
    const { app } = setup();
    t.after(() => app.close());
    const doc: OpenApiDocument = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    for (const op of OPERATIONS) {
      const documented = doc.paths[op.path]?.[op.method] as JsonObject | undefined;
      assert.ok(documented, `${routeOf(op)} is in the document`);
      const body = documented.requestBody as { content: Record<string, { schema: { $ref: string } }> } | undefined;
      assert.equal(
        body !== undefined,
        op.body !== undefined,
        `${routeOf(op)}: a request body iff the operation has one`,
      );
      if (op.body && body) {
        const name = body.content["application/json"]?.schema.$ref.split("/").at(-1) ?? "";
        const shown = doc.components.schemas[name] as JsonObject;
        const own = json(op.body.schema);
        assert.deepEqual(
          [Object.keys((shown.properties as JsonObject) ?? {}), shown.required],
          [Object.keys((own.properties as JsonObject) ?? {}), own.required],
          `${routeOf(op)}: components.schemas.${name} is its body schema`,
        );
      }
      const query = ((documented.parameters ?? []) as JsonObject[]).filter((p) => p.in === "query");
      const own = op.query ? json(op.query) : { properties: {} };
      assert.deepEqual(
        query.map((p) => [p.name, p.required, bare(p.schema)]),
        Object.entries(own.properties as JsonObject).map(([name, schema]) => [
          name,
          ((own.required ?? []) as string[]).includes(name),
          bare(schema),
        ]),
        `${routeOf(op)}: its query parameters are those of its query schema`,
      );
    }
  });
});

describe("bridge tools are made from the routes they call", () => {
  let app: FastifyInstance;
  let fakes: ReturnType<typeof setup>;
  let client: Client;
  let dir: string;
  const called: string[] = [];

  before(async () => {
    fakes = setup();
    app = fakes.app;
    app.addHook("onRequest", async (request) => void called.push(`${request.method} ${request.routeOptions.url}`));
    const url = await app.listen({ host: "127.0.0.1", port: 0 });
    dir = tempDir("swarm-single-source-");
    const server = createBridgeServer({
      client: createSwarmClient({ url, source: "test" }),
      specs: createSpecStore(join(dir, "specs")),
      env: {},
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    client = new Client({ name: "single-source-test", version: "1.0.0" });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  });
  after(async () => {
    await client?.close();
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("each route tool names an operation of the document, and lists every field of that route with the route's schema", async () => {
    const { tools } = await client.listTools();
    const listed = new Map(tools.map((tool) => [tool.name, tool.inputSchema as JsonObject]));
    for (const [name, tool] of Object.entries(ROUTE_TOOLS)) {
      const route: Operation = tool.route;
      assert.ok(OPERATIONS.includes(route), `${name} calls ${route.operationId}, an operation of the document`);
      const properties = (listed.get(name)?.properties ?? {}) as Record<string, JsonObject>;
      const body = route.body ? bodyObject(route.body.schema) : undefined;
      const routeFields: Array<[string, "path" | "query" | "body", JsonObject | undefined]> = [
        ...paramNames(route.path).map((field): [string, "path", undefined] => [field, "path", undefined]),
        ...Object.entries(route.query?.shape ?? {}).map(([field, schema]): [string, "query", JsonObject] => [
          field,
          "query",
          json(schema as z.ZodType, "output"),
        ]),
        ...Object.entries(body?.shape ?? {}).map(([field, schema]): [string, "body", JsonObject] => [
          field,
          "body",
          json(schema as z.ZodType),
        ]),
      ];
      assert.deepEqual(
        tool.fields.map((field) => [field.name, field.in]),
        routeFields.map(([field, where]) => [field, where]),
        `${name}: every field of its route, in the route's order`,
      );
      for (const [field, where, own] of routeFields) {
        const as = tool.fields.find((f) => f.name === field)?.as ?? field;
        const property = properties[as];
        assert.ok(property, `${name} lists ${where} field ${field} (as ${as})`);
        assert.equal(typeof property.description, "string", `${name}.${as} is described`);
        if (own === undefined) {
          assert.equal(property.type, "string", `${name}.${as}: a path parameter is text`);
          continue;
        }
        // The tool may offer a route's nullable field without null (a cap's "lift"): nothing else.
        const variants = [bare(own), ...((own.anyOf as JsonObject[] | undefined) ?? []).map(bare)];
        assert.ok(
          variants.some((variant) => JSON.stringify(variant) === JSON.stringify(bare(property))),
          `${name}.${as} is the route's ${where} field ${field}: ${JSON.stringify(bare(property))} vs ${JSON.stringify(bare(own))}`,
        );
      }
    }
  });

  /** A valid input of each route tool (the fakes answer every route), and what the service must get. */
  const SAMPLES: Record<RouteToolName, [input: Json, call?: [method: string, args: unknown[]]]> = {
    swarm_create_run: [
      { spec: { name: "x", script: [] }, prompt: "go", keepAlive: true },
      ["createRun", [{ spec: { name: "x", script: [] }, prompt: "go", keepAlive: true }]],
    ],
    swarm_list_runs: [{ limit: 5 }, ["listRuns", [5]]],
    swarm_get_run: [{ runId: RUN_ID }, ["getRun", [RUN_ID]]],
    swarm_delete_run: [{ runId: RUN_ID }, ["deleteRun", [RUN_ID, { purge: false }]]],
    swarm_watch_events: [{ runId: RUN_ID, maxWaitSeconds: 0 }],
    swarm_spawn_agent: [
      { runId: RUN_ID, parentAgentId: "a_1", spec: { name: "kid", script: [] }, waitFor: ["a_1"], idempotencyKey: "k" },
      [
        "spawn",
        [RUN_ID, { parentAgentId: "a_1", spec: { name: "kid", script: [] }, waitFor: ["a_1"], idempotencyKey: "k" }],
      ],
    ],
    swarm_get_agent: [{ agentId: "a_1" }, ["getAgent", ["a_1"]]],
    swarm_get_machine: [{ agentId: "a_1" }, ["getMachine", ["a_1"]]],
    swarm_set_budget: [{ agentId: "a_1", maxCostUsd: 2 }, ["setBudget", ["a_1", { maxCostUsd: 2 }]]],
    swarm_prompt_agent: [{ agentId: "a_1", text: "more" }, ["prompt", ["a_1", "more"]]],
    swarm_steer_agent: [
      { agentId: "a_1", message: "turn", scope: "subtree" },
      ["steer", ["a_1", { message: "turn", scope: "subtree" }]],
    ],
    swarm_pause_agent: [{ agentId: "a_1", scope: "subtree" }, ["pause", ["a_1", "subtree"]]],
    swarm_resume_agent: [{ agentId: "a_1" }, ["resume", ["a_1", "agent"]]],
    swarm_stop_agent: [
      { agentId: "a_1", mode: "drain", drainTimeoutMs: 5_000 },
      ["stop", ["a_1", { mode: "drain", scope: "agent", drainTimeoutMs: 5_000 }]],
    ],
    swarm_get_result: [{ agentId: "a_1", waitSeconds: 3 }, ["result", ["a_1", 3]]],
    swarm_fork_agent: [
      { agentId: "a_1", prompts: ["left", "right"], budget: { maxCostUsd: 1 } },
      ["fork", ["a_1", { prompts: ["left", "right"], budget: { maxCostUsd: 1 }, keepAlive: true }]],
    ],
    swarm_get_changes: [{ agentId: "a_1" }, ["changes", ["a_1"]]],
    swarm_adopt_changes: [
      { agentId: "a_1", from: "a_2", onConflict: "theirs" },
      ["adopt", ["a_1", { from: "a_2", onConflict: "theirs" }]],
    ],
    swarm_wait_agents: [
      { runId: RUN_ID, agentIds: ["a_1", "a_2"], mode: "first", timeoutMs: 5_000 },
      ["waitFor", [RUN_ID, { agentIds: ["a_1", "a_2"], mode: "first", stopOthers: false, timeoutMs: 5_000 }]],
    ],
    swarm_list_permissions: [{ runId: RUN_ID, state: "all" }, ["listPermissions", [RUN_ID, "all"]]],
    swarm_resolve_permission: [
      { agentId: "a_1", requestId: PERMISSION.requestId, decision: "deny", message: "no" },
      ["resolvePermission", ["a_1", PERMISSION.requestId, { decision: "deny", message: "no" }]],
    ],
    swarm_list_models: [
      { provider: "anthropic", available: true },
      ["listModels", [{ provider: "anthropic", available: true }]],
    ],
    swarm_list_nodes: [{}, ["listNodes", []]],
  };

  it("each route tool calls its route, with the input's fields where the route takes them", async () => {
    assert.deepEqual(Object.keys(SAMPLES).sort(), Object.keys(ROUTE_TOOLS).sort(), "a sample for every route tool");
    // The stream's replay up to the snapshot's asOf (7), so that a window with no wait ends.
    for (let seq = 1; seq <= 7; seq++) fakes.events.append(RUN_ID, "agent_state_changed", "a_1", { seq });
    for (const [name, [input, call]] of Object.entries(SAMPLES)) {
      const tool = ROUTE_TOOLS[name as RouteToolName];
      called.length = 0;
      fakes.swarm.calls.length = 0;
      const answer = (await client.callTool({ name, arguments: input })) as Json;
      assert.notEqual(answer.isError, true, `${name}: ${JSON.stringify(answer.content)}`);
      assert.ok(
        called.includes(routeOf(tool.route)),
        `${name} called ${called.join(", ")}, not ${routeOf(tool.route)}`,
      );
      if (call) assert.deepEqual(fakes.swarm.last(call[0] as "getRun"), call[1], `${name}: what the service got`);
    }
  });
});

describe("a field added to a route reaches the tool made from it", () => {
  it("is listed, described, sent in the body, and checked by the route's rules in the tool's words", () => {
    const body = withRules(
      z.strictObject({
        colour: z.enum(["red", "blue"]).optional().describe("A new field."),
        size: z.number().int().optional().describe("Another."),
      }),
      { holds: (b) => b.size === undefined || b.colour !== undefined, path: "size", message: "needs a colour" },
    );
    const route = {
      method: "post",
      path: "/things/{runId}",
      operationId: "paintThing",
      tag: "runs",
      summary: "Paint",
      body: { schema: body, examples: { red: { summary: "Red", value: { colour: "red" } } } },
      ok: { 202: { description: "Painted.", empty: true } },
      errors: {},
    } as const satisfies Operation;
    const tool = routeTool({ route, title: "Paint", description: "Paints.", annotations: {} });
    const listed = json(tool.input) as { properties: Record<string, JsonObject> };
    assert.deepEqual(Object.keys(listed.properties), ["runId", "colour", "size"]);
    assert.equal(listed.properties.colour?.description, "A new field.");
    const input = tool.input.parse({ runId: "r_1", colour: "red", size: 3 });
    assert.deepEqual(tool.request(input), { params: { runId: "r_1" }, query: {}, body: { colour: "red", size: 3 } });
    const refused = tool.input.safeParse({ runId: "r_1", size: 3 });
    assert.deepEqual(
      refused.error?.issues.map((issue) => issue.message),
      ["size needs a colour."],
    );
  });
});
