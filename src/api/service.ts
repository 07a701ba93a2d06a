import { HealthFaultSchema, HealthSchema } from "./fields.ts";
import { operation } from "./operation.ts";

/** The daemon's own routes: liveness, this API's description, metrics, and the pages it serves. */

export const getHealth = operation({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  tag: "service",
  summary: "Liveness probe",
  description:
    "Whether the daemon answers and takes writes. While writes to the data folder fail it answers 503; each call then tries the storage again (reopening the ledger), as the daemon does every second, and answers 200 once a write goes through.",
  open: true,
  ok: {
    200: { description: "The daemon answers and its data folder takes writes.", json: HealthSchema },
    503: {
      description: "The daemon answers, but writes fail: every route that records something answers 507 meanwhile.",
      json: HealthFaultSchema,
    },
  },
  errors: {},
});

export const getOpenApiDocument = operation({
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
});

export const getMetrics = operation({
  method: "get",
  path: "/metrics",
  operationId: "getMetrics",
  tag: "service",
  summary: "Prometheus metrics",
  description: "The daemon's metrics in Prometheus's text format, every name prefixed `swarmd_`.",
  ok: { 200: { description: "The metrics.", media: "text/plain", schema: { type: "string" } } },
  errors: {},
});

export const getDocsPage = operation({
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
});

export const getDocsAsset = operation({
  method: "get",
  path: "/docs/{asset}",
  operationId: "getDocsAsset",
  tag: "service",
  summary: "A file of the docs page",
  open: true,
  ok: { 200: { description: "The file (script, style sheet or icon).", media: "*/*", schema: { type: "string" } } },
  errors: { 404: "No such file." },
});

export const getConsole = operation({
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
});

export const getConsoleAsset = operation({
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
});
