import {
  getAgent,
  getAgentMachine,
  getResult,
  pauseAgent,
  promptAgent,
  resumeAgent,
  setBudget,
  steerAgent,
  stopAgent,
} from "./agents.ts";
import { streamRunEvents } from "./events.ts";
import { adoptChanges, forkAgent, getChanges, waitForAgents } from "./forks.ts";
import { deleteMcp, getMcp, postMcp } from "./mcp.ts";
import { listModels } from "./models.ts";
import { listNodes } from "./nodes.ts";
import type { Operation } from "./operation.ts";
import { listPermissions, resolvePermission } from "./permissions.ts";
import { createRun, deleteRun, getRun, listRuns, spawnAgent } from "./runs.ts";
import {
  getConsole,
  getConsoleAsset,
  getDocsAsset,
  getDocsPage,
  getHealth,
  getMetrics,
  getOpenApiDocument,
} from "./service.ts";
import { getRunTimeline } from "./timeline.ts";

/**
 * Every route of spec section 4, in the document's order. Each is declared in the file of its
 * resource (`runs.ts`, `agents.ts`, `permissions.ts`, `events.ts`, `service.ts`, `mcp.ts`) with the schemas
 * it parses and answers with; `GET /openapi.json` is generated from this list.
 */
export const OPERATIONS: readonly Operation[] = [
  getHealth,
  getOpenApiDocument,
  getMetrics,
  getDocsPage,
  getDocsAsset,
  getConsole,
  getConsoleAsset,
  createRun,
  listRuns,
  getRun,
  getRunTimeline,
  deleteRun,
  streamRunEvents,
  listPermissions,
  spawnAgent,
  waitForAgents,
  getAgent,
  getAgentMachine,
  setBudget,
  promptAgent,
  steerAgent,
  pauseAgent,
  resumeAgent,
  stopAgent,
  getResult,
  forkAgent,
  getChanges,
  adoptChanges,
  resolvePermission,
  listModels,
  listNodes,
  postMcp,
  deleteMcp,
  getMcp,
];
