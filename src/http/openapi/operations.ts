import type { z } from "zod";
import { SpendCapsSchema } from "../../spec/agent-spec.ts";
import { DEFAULT_RUN_LIST_LIMIT, MAX_RUN_LIST_LIMIT, MAX_WAIT_SECONDS } from "../../swarm-api.ts";
import {
  CreateRunBody,
  DeleteRunQuery,
  EventsQuery,
  LastEventIdHeader,
  PermissionAnswerBody,
  PermissionsQuery,
  PromptBody,
  ResultQuery,
  RunListQuery,
  ScopeBody,
  SpawnBody,
  SteerBody,
  StopBody,
} from "../schemas.ts";
import {
  AgentDetailSchema,
  BudgetAnswerSchema,
  ControlResponseSchema,
  CreateRunResponseSchema,
  HealthSchema,
  MachineViewSchema,
  PendingResultSchema,
  PermissionListSchema,
  PermissionViewSchema,
  PromptAcceptedSchema,
  RunListSchema,
  RunSnapshotSchema,
  SettledResultSchema,
  SpawnResponseSchema,
  SteerResponseSchema,
} from "./response-schemas.ts";
import { STREAM_DESCRIPTION } from "./stream-schemas.ts";

/** A success answer: a JSON body (a zod schema), a body of another media type, or none. */
export type Answer = { description: string } & (
  | { json: z.ZodType }
  | { media: string; schema: Record<string, unknown> }
  | { empty: true }
);

export interface Operation {
  method: "get" | "post" | "delete";
  /** OpenAPI form: `/runs/{runId}`. Path parameters are described once, in `openapi-document.ts`. */
  path: string;
  operationId: string;
  tag: "service" | "runs" | "agents" | "approvals" | "events";
  summary: string;
  description?: string;
  /** Needs no bearer token (`src/http/auth.ts`). */
  open?: true;
  /** The zod schema the route parses its query with, and a line for each parameter. */
  query?: { schema: z.ZodObject; describe: Record<string, string> };
  /** Request headers the route reads, with the zod schema it parses each with. */
  headers?: Record<string, { schema: z.ZodType; describe: string }>;
  /** The zod schema the route parses its body with; `optional` when the body may be left out. */
  body?: { schema: z.ZodType; optional?: true };
  ok: Record<number, Answer>;
  /** The refusals particular to this route (spec section 7) with their conditions; the builder adds those every route shares. */
  errors: Record<number, string>;
}

const SCOPE = "`scope` is `agent` (default) or `subtree`.";
const CONTROL = "Answered once every member answered and the events the request caused are committed.";

/** Every route of spec section 4, with what it takes, answers and refuses. */
export const OPERATIONS: readonly Operation[] = [
  {
    method: "get",
    path: "/health",
    operationId: "getHealth",
    tag: "service",
    summary: "Liveness probe",
    open: true,
    ok: { 200: { description: "The daemon answers.", json: HealthSchema } },
    errors: {},
  },
  {
    method: "get",
    path: "/openapi.json",
    operationId: "getOpenApiDocument",
    tag: "service",
    summary: "This document",
    ok: {
      200: {
        description: "The OpenAPI 3.1 description of the daemon's routes.",
        media: "application/json",
        schema: { type: "object" },
      },
    },
    errors: {},
  },
  {
    method: "get",
    path: "/metrics",
    operationId: "getMetrics",
    tag: "service",
    summary: "Prometheus metrics",
    description: "The daemon's metrics in Prometheus's text format, every name prefixed `swarmd_`.",
    ok: { 200: { description: "The metrics.", media: "text/plain", schema: { type: "string" } } },
    errors: {},
  },
  {
    method: "get",
    path: "/docs",
    operationId: "getDocsPage",
    tag: "service",
    summary: "The API docs page",
    description:
      "swagger-ui, served from the daemon's own files, showing `/openapi.json`. The page and its files need no token; it asks for one when `/openapi.json` answers 401.",
    open: true,
    ok: { 200: { description: "The page.", media: "text/html", schema: { type: "string" } } },
    errors: {},
  },
  {
    method: "get",
    path: "/docs/{asset}",
    operationId: "getDocsAsset",
    tag: "service",
    summary: "A file of the docs page",
    open: true,
    ok: { 200: { description: "The file (script, style sheet or icon).", media: "*/*", schema: { type: "string" } } },
    errors: { 404: "No such file." },
  },
  {
    method: "get",
    path: "/",
    operationId: "getConsole",
    tag: "service",
    summary: "The operator console",
    description:
      "The web console (runs, the live spawn tree, the event log, controls), built into the installation. The page and its files need no token; the page asks for one and sends it on every call it makes. 503 when the console was not built.",
    open: true,
    ok: { 200: { description: "The page.", media: "text/html", schema: { type: "string" } } },
    errors: { 503: "The console is not built (`npm run build:console`)." },
  },
  {
    method: "get",
    path: "/console/{asset}",
    operationId: "getConsoleAsset",
    tag: "service",
    summary: "A file of the console",
    open: true,
    ok: {
      200: {
        description: "The file (script or style sheet), named by its content.",
        media: "*/*",
        schema: { type: "string" },
      },
    },
    errors: { 404: "No such file." },
  },
  {
    method: "post",
    path: "/runs",
    operationId: "createRun",
    tag: "runs",
    summary: "Create a run",
    description:
      "Creates the root agent and provisions its sandbox in the background; `prompt`, when given, is its first turn.",
    body: { schema: CreateRunBody },
    ok: { 202: { description: "The run was created; its root is provisioning.", json: CreateRunResponseSchema } },
    errors: {
      400: "Invalid body, the spec above the daemon's limits, or a `model` the service does not know or does not carry.",
    },
  },
  {
    method: "get",
    path: "/runs",
    operationId: "listRuns",
    tag: "runs",
    summary: "List runs",
    description: "Every run the daemon knows, newest first, with its agents counted by state.",
    query: {
      schema: RunListQuery,
      describe: {
        limit: `Most runs to answer, an integer 1..${MAX_RUN_LIST_LIMIT} (default ${DEFAULT_RUN_LIST_LIMIT}).`,
      },
    },
    ok: { 200: { description: "The runs.", json: RunListSchema } },
    errors: { 400: `\`limit\` not an integer 1..${MAX_RUN_LIST_LIMIT}.` },
  },
  {
    method: "get",
    path: "/runs/{runId}",
    operationId: "getRun",
    tag: "runs",
    summary: "Snapshot of a run",
    description: "Every agent of the run, ended ones included: the fold of its ledger up to `asOf`.",
    ok: { 200: { description: "The snapshot.", json: RunSnapshotSchema } },
    errors: { 404: "Run does not exist." },
  },
  {
    method: "delete",
    path: "/runs/{runId}",
    operationId: "deleteRun",
    tag: "runs",
    summary: "Stop a run, or purge it",
    description:
      "Stops every live agent of the run, leaves first. The ledger and results are kept unless `purge=true`, which then removes the run for good.",
    query: {
      schema: DeleteRunQuery,
      describe: { purge: "`true` removes the run, its ledger and results for good; `false` (default) keeps them." },
    },
    ok: { 204: { description: "The run is stopped (and purged when asked).", empty: true } },
    errors: {
      400: "`purge` other than `true` or `false`.",
      404: "Run does not exist (or was purged).",
      503: "A sandbox could not be closed (`RUNTIME_UNAVAILABLE`); the purge finishes on the next start.",
    },
  },
  {
    method: "get",
    path: "/runs/{runId}/events",
    operationId: "streamRunEvents",
    tag: "events",
    summary: "Event stream of the whole run (SSE)",
    description: STREAM_DESCRIPTION,
    query: {
      schema: EventsQuery,
      describe: {
        lastEventId: "Replay persisted events after this `seq` (the `Last-Event-ID` header wins when both are given).",
      },
    },
    headers: {
      "Last-Event-ID": {
        schema: LastEventIdHeader,
        describe:
          "Replay persisted events after this `seq`: what a reconnecting EventSource sends. With neither, the stream starts at the run's first event.",
      },
    },
    ok: {
      200: {
        description:
          "A Server-Sent Events stream that stays open until the client leaves, the daemon stops or the run is purged.",
        media: "text/event-stream",
        schema: { type: "string" },
      },
    },
    errors: { 400: "Malformed `Last-Event-ID` or `lastEventId`.", 404: "Run does not exist." },
  },
  {
    method: "get",
    path: "/runs/{runId}/permissions",
    operationId: "listPermissions",
    tag: "approvals",
    summary: "The run's approval inbox",
    description: "Approval requests of every agent of the run, oldest first.",
    query: { schema: PermissionsQuery, describe: { state: "`pending` (default), `resolved` or `all`." } },
    ok: { 200: { description: "The requests.", json: PermissionListSchema } },
    errors: { 400: "`state` other than `pending`, `resolved` or `all`.", 404: "Run does not exist." },
  },
  {
    method: "post",
    path: "/runs/{runId}/agents",
    operationId: "spawnAgent",
    tag: "runs",
    summary: "Spawn a child",
    description:
      "Forks a live parent's sandbox. A spawn a budget refuses still answers 202; the child then ends `budget-exceeded`.",
    body: { schema: SpawnBody },
    ok: {
      202: {
        description: "The child was accepted (`spawning` while it waits for `waitFor`).",
        json: SpawnResponseSchema,
      },
    },
    errors: {
      400: "Invalid body, `waitFor` names an agent outside this run, the spec asks for more than the parent has, or a `model` the service does not know or does not carry.",
      404: "The run does not exist, or `parentAgentId` is not an agent of this run.",
      409: "The parent is not live, or is draining (`AGENT_DRAINING`).",
    },
  },
  {
    method: "get",
    path: "/agents/{agentId}",
    operationId: "getAgent",
    tag: "agents",
    summary: "An agent's view",
    ok: {
      200: {
        description: "The agent view with its budget and, when the harness answers in time, its session statistics.",
        json: AgentDetailSchema,
      },
    },
    errors: { 404: "Agent does not exist." },
  },
  {
    method: "get",
    path: "/agents/{agentId}/machine",
    operationId: "getAgentMachine",
    tag: "agents",
    summary: "An agent's state machine",
    description: "State value, tags and latest transitions of the agent's machine as the daemon runs it.",
    ok: { 200: { description: "The machine.", json: MachineViewSchema } },
    errors: { 404: "Agent does not exist." },
  },
  {
    method: "post",
    path: "/agents/{agentId}/budget",
    operationId: "setBudget",
    tag: "agents",
    summary: "Set an agent's spend caps",
    description: "New absolute caps for the agent's subtree; `null` lifts its own cap. Resumes nothing.",
    body: { schema: SpendCapsSchema },
    ok: { 200: { description: "The new caps, committed as `budget_changed`.", json: BudgetAnswerSchema } },
    errors: {
      400: "Neither `maxTokens` nor `maxCostUsd`, another field, or a value out of range.",
      404: "No such agent.",
      409: "A cap would leave the agent more than its parent has left (`BUDGET_EXCEEDS_PARENT`).",
    },
  },
  {
    method: "post",
    path: "/agents/{agentId}/prompt",
    operationId: "promptAgent",
    tag: "agents",
    summary: "Start a turn",
    description: "Runs after the current turn when busy, on resume when paused, once running when not yet running.",
    body: { schema: PromptBody },
    ok: { 202: { description: "The prompt was accepted.", json: PromptAcceptedSchema } },
    errors: { 400: "Invalid body.", 404: "No such agent.", 409: "Agent not live, or draining (`AGENT_DRAINING`)." },
  },
  {
    method: "post",
    path: "/agents/{agentId}/steer",
    operationId: "steerAgent",
    tag: "agents",
    summary: "Steer the current turn",
    description: `${SCOPE} With \`subtree\` the named agent gets one message with a table of its children. ${CONTROL}`,
    body: { schema: SteerBody },
    ok: {
      202: { description: "One result per member, and how the message reached the agent.", json: SteerResponseSchema },
    },
    errors: {
      400: "Invalid body or scope.",
      404: "No such agent.",
      409: "Agent not live, or draining (`AGENT_DRAINING`).",
      502: "The harness did not accept the message (`HARNESS_REJECTED`).",
    },
  },
  {
    method: "post",
    path: "/agents/{agentId}/pause",
    operationId: "pauseAgent",
    tag: "agents",
    summary: "Pause (freeze) an agent or subtree",
    description: `${SCOPE} The body is optional. ${CONTROL}`,
    body: { schema: ScopeBody, optional: true },
    ok: { 202: { description: "One result per member, parents first.", json: ControlResponseSchema } },
    errors: {
      400: "Invalid scope.",
      404: "No such agent.",
      409: "Agent not live.",
      502: "The sandbox could not be paused (scope `agent` only).",
    },
  },
  {
    method: "post",
    path: "/agents/{agentId}/resume",
    operationId: "resumeAgent",
    tag: "agents",
    summary: "Resume a paused agent or subtree",
    description: `${SCOPE} The body is optional. ${CONTROL}`,
    body: { schema: ScopeBody, optional: true },
    ok: { 202: { description: "One result per member, children first.", json: ControlResponseSchema } },
    errors: {
      400: "Invalid scope.",
      404: "No such agent.",
      409: "Agent not paused (`AGENT_NOT_PAUSED`), or not live (`AGENT_NOT_LIVE`).",
      502: "The sandbox could not be resumed (scope `agent` only).",
    },
  },
  {
    method: "post",
    path: "/agents/{agentId}/stop",
    operationId: "stopAgent",
    tag: "agents",
    summary: "Stop an agent or subtree: abort now, or drain",
    description: `${SCOPE} \`mode\` is \`abort\` (default) or \`drain\`; \`drainTimeoutMs\` is for \`drain\` only. The body is optional. A stop of an ended agent answers \`noop\`.`,
    body: { schema: StopBody, optional: true },
    ok: { 202: { description: "One result per member (leaves first for an abort).", json: ControlResponseSchema } },
    errors: {
      400: 'Invalid `mode`, `scope` or `drainTimeoutMs`, or `drainTimeoutMs` without `mode: "drain"`.',
      404: "No such agent.",
    },
  },
  {
    method: "get",
    path: "/agents/{agentId}/result",
    operationId: "getResult",
    tag: "agents",
    summary: "Read or wait for an agent's result",
    description: "Other query parameters are ignored. A client that disconnects ends its wait.",
    query: {
      schema: ResultQuery,
      describe: {
        wait: `Seconds to hold the request while the result is pending, an integer 0..${MAX_WAIT_SECONDS} (default 0).`,
      },
    },
    ok: {
      200: { description: "Settled: the newest settled turn's result.", json: SettledResultSchema },
      202: { description: "Still pending after the wait.", json: PendingResultSchema },
    },
    errors: { 400: `\`wait\` not an integer 0..${MAX_WAIT_SECONDS}.`, 404: "Agent does not exist." },
  },
  {
    method: "post",
    path: "/agents/{agentId}/permissions/{requestId}",
    operationId: "resolvePermission",
    tag: "approvals",
    summary: "Answer an approval request",
    description: "Resolves a pending request of the agent; two answers at once: one wins, the other is the 409.",
    body: { schema: PermissionAnswerBody },
    ok: {
      202: {
        description: "The request as resolved, after `permission_resolved` is committed.",
        json: PermissionViewSchema,
      },
    },
    errors: {
      400: "`decision` other than `allow` or `deny`, an empty or too long `message`, another field.",
      404: "No such agent, or no such request of the agent (`PERMISSION_NOT_FOUND`).",
      409: "Already resolved (`PERMISSION_RESOLVED`).",
    },
  },
];
