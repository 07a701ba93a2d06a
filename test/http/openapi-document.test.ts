/**
 * `GET /openapi.json`: a valid OpenAPI 3.1 document (checked by a real validator) that names every
 * route the server registers, with the successes of spec section 4, the refusals of section 7, and
 * bearer security on exactly the routes that ask for the token.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import type { FastifyInstance } from "fastify";
import { NodeListSchema } from "../../src/api/nodes.ts";
import type { OpenApiDocument } from "../../src/http/openapi/openapi-document.ts";
import { DaemonMetrics } from "../../src/metrics/daemon-metrics.ts";
import { setup as setupServer } from "./fakes.ts";

const TOKEN = "s3cret-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const SPEC_MD = readFileSync(new URL("../../docs/spec.md", import.meta.url), "utf8");

/** A server over fakes with every route the daemon has (`/metrics` included) and a token. */
const setup = () => setupServer({ token: TOKEN, metrics: new DaemonMetrics() });

type Operation = {
  security?: unknown[];
  responses: Record<string, { headers?: Record<string, unknown> }>;
  requestBody?: unknown;
};

async function documentOf(app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject({ method: "GET", url: "/openapi.json", headers: AUTH });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
  return res.json();
}

/** Every operation of the document as `METHOD /path` (fastify's `:param` form) with its object. */
function operationsOf(doc: OpenApiDocument): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods))
      found.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`, operation as Operation);
  }
  return found;
}

/** Every route the server registered, from fastify's own route tree (HEAD is fastify's echo of GET). */
function routesOf(app: FastifyInstance): Set<string> {
  const routes = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (match === null) continue;
    const depth = (match[1] ?? "").length / 4;
    stack.length = depth;
    stack.push(match[2] ?? "");
    for (const method of (match[3] ?? "").split(", ")) if (method !== "HEAD") routes.add(`${method} ${stack.join("")}`);
  }
  return routes;
}

test("GET /openapi.json answers an OpenAPI 3.1 document that a real validator accepts", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const doc = await documentOf(app);
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, "3.1");
  assert.equal(doc.openapi, "3.1.0");
  assert.equal(
    (doc.info as { version: string }).version,
    JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version,
  );
});

test("the document names every route the server registers, and no other", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const doc = await documentOf(app);
  await app.ready();
  const routes = routesOf(app);
  assert.ok(routes.size >= 20, `read ${routes.size} routes from fastify's tree`);
  assert.deepEqual([...operationsOf(doc).keys()].sort(), [...routes].sort());
});

test("every route and success status of spec section 4 is in the document", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const operations = operationsOf(await documentOf(app));
  // Cells are padded to their column's width (Biome formats the tables).
  const rows = [...SPEC_MD.matchAll(/^\| (GET|POST|DELETE) +\| `([^`]+)` +\| (\d{3})(.*)$/gm)];
  assert.ok(rows.length >= 16, `found ${rows.length} route rows in docs/spec.md section 4`);
  for (const [, method, path, status, rest] of rows) {
    const operation = operations.get(`${method} ${path}`);
    assert.ok(operation, `${method} ${path} is not documented`);
    for (const code of [status, ...[...(rest ?? "").matchAll(/\b(\d{3})\b/g)].map((m) => m[1])]) {
      assert.ok(operation.responses[code ?? ""], `${method} ${path}: success ${code} is not documented`);
    }
  }
});

test("every refusal of spec section 7 is documented on its route, with the error body", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const doc = await documentOf(app);
  const operations = operationsOf(doc);
  const rows = [...SPEC_MD.matchAll(/^\| (GET|POST|DELETE) (\/\S+) +\| (\d{3}) +\|/gm)];
  assert.ok(rows.length >= 30, `found ${rows.length} route refusals in docs/spec.md section 7`);
  for (const [, method, path, status] of rows) {
    const response = operations.get(`${method} ${path}`)?.responses[status ?? ""] as
      | { content?: Record<string, { schema: unknown }> }
      | undefined;
    assert.ok(response, `${method} ${path} does not document ${status}`);
    assert.deepEqual(
      response.content,
      { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      `${method} ${path} ${status}`,
    );
  }
  assert.deepEqual((doc.components.schemas.Error as { required: string[] }).required, ["error"]);
  for (const [key, operation] of operations) {
    for (const status of ["403", "500"]) assert.ok(operation.responses[status], `${key} does not document ${status}`);
    if (operation.requestBody)
      for (const status of ["400", "413", "415"])
        assert.ok(operation.responses[status], `${key} takes a body but does not document ${status}`);
  }
});

test("bearer security is on exactly the routes that refuse a request without the token", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const doc = await documentOf(app);
  assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
  assert.deepEqual(doc.components.securitySchemes, {
    bearerAuth: {
      type: "http",
      scheme: "bearer",
      description: (doc.components.securitySchemes.bearerAuth as { description: string }).description,
    },
  });
  const open: string[] = [];
  for (const [key, operation] of operationsOf(doc)) {
    const [method = "", path = ""] = key.split(" ");
    const url = path
      .replace(":runId", "r_1")
      .replace(":agentId", "a_1")
      .replace(":requestId", "p_1")
      .replace(":asset", "docs.js");
    const res = await app.inject({ method: method as "GET", url, payload: method === "POST" ? {} : undefined });
    const isOpen = Array.isArray(operation.security) && operation.security.length === 0;
    if (isOpen) {
      open.push(key);
      assert.equal(operation.responses["401"], undefined, `${key} is open but documents 401`);
      assert.notEqual(res.statusCode, 401, `${key} is documented open but wants the token`);
    } else {
      assert.equal(operation.security, undefined, `${key}: the document-wide bearer requirement applies`);
      assert.equal(res.statusCode, 401, `${key} is documented as needing the token but answered ${res.statusCode}`);
      assert.ok(
        operation.responses["401"]?.headers?.["WWW-Authenticate"],
        `${key} documents 401 with WWW-Authenticate`,
      );
    }
  }
  assert.deepEqual(open.sort(), ["GET /", "GET /console/:asset", "GET /docs", "GET /docs/:asset", "GET /health"]);
});

test("an answer's example in the document is one its own zod schema accepts (GET /nodes)", async (t) => {
  const { app } = setup();
  t.after(() => app.close());
  const doc = await documentOf(app);
  const examples = (doc.components.schemas.NodeList as { examples?: unknown[] }).examples ?? [];
  assert.equal(examples.length, 1, "NodeList shows an example");
  for (const example of examples) assert.deepEqual(NodeListSchema.parse(example), example);
});
