import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AnswerOf } from "../api/operation.ts";
import type { RouteTool, ToolInput } from "../api/route-tool.ts";
import { ROUTE_TOOLS, type RouteToolName } from "../api/tools.ts";
import type { SpecStore } from "../client/spec-store.ts";
import type { CallOptions, SwarmClient } from "../client/swarm-client.ts";
import type { ToolExtra } from "./progress.ts";
import { ANSWERS } from "./tool-answers.ts";
import { guarded } from "./tool-result.ts";

export interface ToolDeps {
  client: SwarmClient;
  specs: SpecStore;
}

/** What a tool's answer is made with: its route, called as the table says, and the bridge's own state. */
export interface ToolContext<T extends RouteTool> extends ToolDeps {
  /** Calls the tool's route with a (parsed) input: its fields go where the route takes them. */
  call(input: ToolInput<T>, options?: CallOptions): Promise<AnswerOf<T["route"]>>;
  extra: ToolExtra;
}

/** Turns a tool's input into its answer: the summary line the model reads first, and the data. */
export type ToolAnswer<T extends RouteTool> = (input: ToolInput<T>, context: ToolContext<T>) => Promise<CallToolResult>;

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
