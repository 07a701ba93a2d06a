import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { AnswerOf } from "../api/operation.ts";
import type { RouteTool, ToolInput } from "../api/route-tool.ts";
import { ROUTE_TOOLS, type RouteToolName } from "../api/tools.ts";
import type { CallOptions } from "../client/swarm-client.ts";
import { ANSWERS, type ToolAnswer, type ToolDeps } from "./tool-answers.ts";
import { guarded } from "./tool-result.ts";

/**
 * Registers every tool of `ROUTE_TOOLS` (src/api/tools.ts): its name, title, description, hints
 * and input schema come from the table, its call from the route the table names; `ANSWERS` only
 * words the answer.
 */
export function registerRouteTools(server: McpServer, deps: ToolDeps): void {
  for (const name of Object.keys(ROUTE_TOOLS) as RouteToolName[]) registerNamed(server, name, deps);
}

function registerNamed<K extends RouteToolName>(server: McpServer, name: K, deps: ToolDeps): void {
  register(server, name, ROUTE_TOOLS[name], ANSWERS[name], deps);
}

function register<T extends RouteTool>(
  server: McpServer,
  name: string,
  tool: T,
  answer: ToolAnswer<T>,
  deps: ToolDeps,
): void {
  const call = (input: ToolInput<T>, options?: CallOptions) =>
    deps.client.call(tool.route, tool.request(input), options) as Promise<AnswerOf<T["route"]>>;
  server.registerTool(
    name,
    { title: tool.title, description: tool.description, inputSchema: tool.input, annotations: tool.annotations },
    // The SDK has parsed the arguments with `tool.input` before this runs.
    (input, extra) => guarded(() => answer(input as ToolInput<T>, { ...deps, call, extra })),
  );
}
