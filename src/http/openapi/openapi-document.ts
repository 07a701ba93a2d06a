import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import * as agents from "../../api/agents.ts";
import { STREAM_MESSAGE_SCHEMAS } from "../../api/events.ts";
import {
  ErrorBodySchema,
  EXAMPLE_IDS,
  ForkedFromSchema,
  HealthFaultSchema,
  HealthSchema,
  PATH_PARAMS,
  SpendViewSchema,
  UsageSchema,
} from "../../api/fields.ts";
import * as forks from "../../api/forks.ts";
import * as mcp from "../../api/mcp.ts";
import * as models from "../../api/models.ts";
import * as nodes from "../../api/nodes.ts";
import type { Answer, Operation } from "../../api/operation.ts";
import { OPERATIONS } from "../../api/operations.ts";
import * as permissions from "../../api/permissions.ts";
import * as runs from "../../api/runs.ts";
import * as timeline from "../../api/timeline.ts";
import { SWARMD_ROOT } from "../../harness/launch.ts";
import { AgentSpecSchema, BudgetSchema } from "../../spec/agent-spec.ts";
import { MAX_MATCH_LENGTH } from "../../spec/approve.ts";
import { TOOL_NAMES } from "../../spec/tool-names.ts";
import { DOCS_ASSET_NAMES } from "./docs-page.ts";

/** A JSON Schema or OpenAPI object, as plain JSON. */
export type JsonObject = { [key: string]: unknown };

/** The OpenAPI 3.1 document `GET /openapi.json` answers. */
export interface OpenApiDocument extends JsonObject {
  openapi: "3.1.0";
  paths: Record<string, Record<string, JsonObject>>;
  components: { schemas: Record<string, JsonObject>; securitySchemes: JsonObject };
}

const StreamMessageSchema = z
  .union(STREAM_MESSAGE_SCHEMAS.map(([, schema]) => schema))
  .describe("One message of the event stream: its SSE `id` (persisted events only), `event` and parsed `data`.");

/**
 * Names of `components.schemas` for the schemas of src/api/ (the request schemas the routes parse
 * with, their answers, and shapes these share). A body or answer of `OPERATIONS` must be one of them.
 */
const COMPONENTS: Record<string, z.ZodType> = {
  AgentSpec: AgentSpecSchema,
  Budget: BudgetSchema,
  CreateRunRequest: runs.CreateRunBody,
  SpawnRequest: runs.SpawnBody,
  SpendCaps: agents.SetBudgetBody,
  PromptRequest: agents.PromptBody,
  SteerRequest: agents.SteerBody,
  ScopeRequest: agents.ScopeBody,
  StopRequest: agents.StopBody,
  PermissionAnswer: permissions.PermissionAnswerBody,
  ForkRequest: forks.ForkBody,
  ForkSpec: forks.ForkSpecSchema,
  AdoptRequest: forks.AdoptBody,
  WaitRequest: forks.WaitBody,
  Error: ErrorBodySchema,
  Health: HealthSchema,
  HealthFault: HealthFaultSchema,
  Usage: UsageSchema,
  SpendView: SpendViewSchema,
  AgentView: agents.AgentViewSchema,
  AgentDetail: agents.AgentDetailSchema,
  RunSnapshot: runs.RunSnapshotSchema,
  RunSummary: runs.RunSummarySchema,
  RunList: runs.RunListSchema,
  RunTimeline: timeline.RunTimelineSchema,
  AgentTimeline: timeline.AgentTimelineSchema,
  TimelineSpan: timeline.TimelineSpanSchema,
  CreateRunResponse: runs.CreateRunResponseSchema,
  SpawnResponse: runs.SpawnResponseSchema,
  ControlResponse: agents.ControlResponseSchema,
  SteerResponse: agents.SteerResponseSchema,
  PromptAccepted: agents.PromptAcceptedSchema,
  BudgetAnswer: agents.BudgetAnswerSchema,
  PermissionView: permissions.PermissionViewSchema,
  PermissionList: permissions.PermissionListSchema,
  SettledResult: agents.SettledResultSchema,
  PendingResult: agents.PendingResultSchema,
  MachineView: agents.MachineViewSchema,
  ModelView: models.ModelViewSchema,
  ModelList: models.ModelListSchema,
  NodeView: nodes.NodeViewSchema,
  NodeList: nodes.NodeListSchema,
  ForkedFrom: ForkedFromSchema,
  ForkResponse: forks.ForkResponseSchema,
  FileChange: forks.FileChangeSchema,
  Changes: forks.ChangesSchema,
  AdoptResponse: forks.AdoptResponseSchema,
  WaitResult: forks.WaitResultSchema,
  WaitResponse: forks.WaitResponseSchema,
  McpRequest: mcp.McpBody,
  McpMessage: mcp.McpMessageSchema,
  McpAnswer: mcp.McpAnswerSchema,
  ...Object.fromEntries(STREAM_MESSAGE_SCHEMAS),
  StreamMessage: StreamMessageSchema,
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Path parameters: the ids of `PATH_PARAMS`, and the name of a page's file. */
const PATH_PARAMETERS: Record<string, { description: string; schema: JsonObject }> = {
  ...Object.fromEntries(
    Object.entries(PATH_PARAMS).map(([name, { pattern, description }]) => [
      name,
      {
        description,
        schema: { type: "string", pattern: pattern.source },
        example: EXAMPLE_IDS[name as keyof typeof EXAMPLE_IDS],
      },
    ]),
  ),
  asset: { description: "One of the docs page's files.", schema: { type: "string", enum: [...DOCS_ASSET_NAMES] } },
};

/** The refusals every route shares (spec sections 5 and 7); a route's own conditions come first. */
const SHARED_ERRORS = {
  badJson: "Malformed JSON, or JSON nested deeper than 512 levels.",
  401: "Missing or wrong bearer token (when the daemon runs with `SWARM_TOKEN`).",
  403: "The `Host` header names no host the daemon serves, or is missing.",
  413: "The body is over `SWARM_BODY_LIMIT`.",
  415: "The body is not `application/json`.",
  500: "A server fault: `Internal error.`, without details.",
};

/** The document: every route of `OPERATIONS`, its schemas generated from the zod schemas the routes parse and answer with. */
export function createOpenApiDocument(): OpenApiDocument {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, {
    io: "input",
    unrepresentable: "any",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const schemas: Record<string, JsonObject> = {};
  for (const [id, schema] of Object.entries(generated.schemas)) schemas[id] = withoutDialect(schema as JsonObject);
  describeWhatZodCannot(schemas);

  const names = new Map<z.ZodType, string>(Object.entries(COMPONENTS).map(([id, schema]) => [schema, id]));
  const paths: OpenApiDocument["paths"] = {};
  for (const operation of OPERATIONS) {
    const methods = paths[operation.path] ?? {};
    methods[operation.method] = describeOperation(operation, names);
    paths[operation.path] = methods;
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "swarmd",
      version: packageVersion(),
      description:
        'Runs trees of sandboxed AI coding agents and controls them from the outside (docs/spec.md). Bodies are JSON; every refusal is `{"error": message}`. ' +
        "Node's own refusals of bytes that are not HTTP are 400, 408 and 431 in the same form, on any route.",
    },
    tags: [
      { name: "runs", description: "Runs and their spawn tree." },
      { name: "agents", description: "One agent: its view, turns and controls." },
      { name: "approvals", description: "Tool calls held for an operator's decision." },
      { name: "events", description: "The run's event stream." },
      { name: "models", description: "The models a spec may name." },
      { name: "nodes", description: "The machines sandboxes run on." },
      { name: "mcp", description: "The tool bridge as an MCP server (Streamable HTTP)." },
      { name: "service", description: "The daemon itself." },
    ],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "`SWARM_TOKEN`. Without it set, the daemon listens on loopback only and needs no token.",
        },
      },
    },
  };
}

function describeOperation(operation: Operation, names: ReadonlyMap<z.ZodType, string>): JsonObject {
  const nameOf = (schema: z.ZodType): string => {
    const name = names.get(schema);
    if (name === undefined)
      throw new Error(`${operation.operationId}: a body or answer schema that is not in components.schemas`);
    return name;
  };
  const parameters = [...pathParameters(operation.path), ...queryParameters(operation), ...headerParameters(operation)];
  const responses: JsonObject = {};
  for (const [status, answer] of Object.entries(operation.ok)) responses[status] = successResponse(answer, nameOf);
  for (const [status, description] of Object.entries(errorStatuses(operation)))
    responses[status] = errorResponse(Number(status), description);
  return {
    operationId: operation.operationId,
    tags: [operation.tag],
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    ...(operation.open ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(operation.body
      ? {
          requestBody: {
            required: operation.body.optional !== true,
            content: {
              "application/json": {
                schema: ref(nameOf(operation.body.schema)),
                // Named bodies that work as they are; "Try it out" starts from the first.
                examples: operation.body.examples,
              },
            },
          },
        }
      : {}),
    responses,
  };
}

/** The statuses a route may answer besides its successes, each with its conditions. */
function errorStatuses(operation: Operation): Record<number, string> {
  const statuses: Record<number, string> = { ...operation.errors };
  if (operation.body) {
    statuses[400] = statuses[400] === undefined ? SHARED_ERRORS.badJson : `${statuses[400]} ${SHARED_ERRORS.badJson}`;
    statuses[413] = SHARED_ERRORS[413];
    statuses[415] = SHARED_ERRORS[415];
  }
  if (!operation.open) statuses[401] = SHARED_ERRORS[401];
  // A route's own 403 (a foreign Origin at /mcp) comes after the Host refusal every route has.
  statuses[403] = statuses[403] === undefined ? SHARED_ERRORS[403] : `${SHARED_ERRORS[403]} ${statuses[403]}`;
  statuses[500] = SHARED_ERRORS[500];
  return statuses;
}

function successResponse(answer: Answer, nameOf: (schema: z.ZodType) => string): JsonObject {
  if ("empty" in answer) return { description: answer.description };
  // OpenAPI 3.1 has no way to type the items of a stream (3.2's `itemSchema`); each message's
  // shape is named in `x-item-schema` for readers and tools that look.
  if ("json" in answer)
    return {
      description: answer.description,
      content: {
        "application/json": { schema: ref(nameOf(answer.json)) },
        ...(answer.stream
          ? { "text/event-stream": { schema: { type: "string" }, "x-item-schema": ref(nameOf(answer.stream)) } }
          : {}),
      },
    };
  if (answer.media === "text/event-stream")
    return {
      description: answer.description,
      content: { "text/event-stream": { schema: answer.schema, "x-item-schema": ref("StreamMessage") } },
    };
  return { description: answer.description, content: { [answer.media]: { schema: answer.schema } } };
}

function errorResponse(status: number, description: string): JsonObject {
  return {
    description,
    ...(status === 401
      ? {
          headers: {
            "WWW-Authenticate": { description: "Always `Bearer`.", schema: { type: "string", const: "Bearer" } },
          },
        }
      : {}),
    content: { "application/json": { schema: ref("Error") } },
  };
}

function pathParameters(path: string): JsonObject[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map(([, name = ""]) => {
    const known = PATH_PARAMETERS[name];
    if (known === undefined) throw new Error(`${path}: path parameter ${name} is not described`);
    return { name, in: "path", required: true, ...known };
  });
}

function queryParameters({ operationId, query }: Operation): JsonObject[] {
  if (query === undefined) return [];
  return objectMembers(operationId, query).map(({ name, required, schema, description }) => ({
    name,
    in: "query",
    required,
    description,
    schema,
  }));
}

function headerParameters({ headers = {} }: Operation): JsonObject[] {
  return Object.entries(headers).map(([name, { schema, describe }]) => ({
    name,
    in: "header",
    required: false,
    description: describe,
    schema: withoutDialect(toJson(schema)),
  }));
}

/** The members of a query object, each described: a parameter the route reads but nobody described is a build error. */
function objectMembers(operationId: string, schema: z.ZodObject) {
  const json = toJson(schema);
  const properties = (json.properties ?? {}) as Record<string, JsonObject>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, { description, ...property }]) => {
    if (typeof description !== "string") throw new Error(`${operationId}: query parameter ${name} is not described`);
    return { name, required: required.has(name), schema: property, description };
  });
}

const toJson = (schema: z.ZodType): JsonObject =>
  z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonObject;

/** `$schema` and `$id` belong to standalone schemas; inside an OpenAPI 3.1 document the dialect is the document's. */
function withoutDialect({ $schema: _schema, $id: _id, ...rest }: JsonObject): JsonObject {
  return rest;
}

/**
 * What the spec schema checks in code, which JSON Schema cannot see: exactly one of `model` and
 * `script` (a refine), and the shape of an `approve` rule (parsed by a transform in approve.ts, so
 * its generated schema is empty).
 */
function describeWhatZodCannot(schemas: Record<string, JsonObject>): void {
  const spec = schemas.AgentSpec;
  const properties = spec?.properties as Record<string, JsonObject> | undefined;
  const approve = properties?.approve;
  if (spec === undefined || approve === undefined)
    throw new Error("AgentSpec without approve: update describeWhatZodCannot");
  spec.oneOf = [{ required: ["model"] }, { required: ["script"] }];
  const rule = z.union([
    z.literal("*").describe("Every tool call."),
    z.strictObject({
      tool: z.enum(TOOL_NAMES),
      match: z
        .string()
        .min(1)
        .max(MAX_MATCH_LENGTH)
        .optional()
        .describe("A JavaScript regular expression tested against the call's arguments as JSON."),
    }),
  ]);
  approve.items = withoutDialect(toJson(rule));
}

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(SWARMD_ROOT, "package.json"), "utf8")) as { version?: string };
  return version ?? "0.0.0";
}
