import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { z } from "zod";
import type { AnswerOf } from "../api/operation.ts";
import type { RouteTool, ToolInput } from "../api/route-tool.ts";
import { ROUTE_TOOLS, type RouteToolName } from "../api/tools.ts";
import type { CallOptions } from "../client/swarm-client.ts";
import { ANSWERS, type ToolAnswer, type ToolDeps } from "./tool-answers.ts";
import { guarded } from "./tool-result.ts";

/**
 * Registers every tool of `ROUTE_TOOLS` (src/api/tools.ts): its name, title, description, hints
 * and input schema come from the table, its call from the route the table names; `ANSWERS` only
 * words the answer. Without a spec store (the daemon's `/mcp`) the tools that take a saved spec's
 * name (`specName`) are offered without it.
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
  const input: z.ZodObject =
    deps.specs === undefined && "specName" in tool.input.shape ? tool.input.omit({ specName: true }) : tool.input;
  server.registerTool(
    name,
    { title: tool.title, description: tool.description, inputSchema: input, annotations: tool.annotations },
    // The SDK has parsed the arguments with `input` before this runs. A call the client cancels (or
    // leaves) aborts the request it is waiting for.
    (parsed, extra) => {
      const call = (values: ToolInput<T>, options?: CallOptions) =>
        deps.client.call(tool.route, tool.request(values), { signal: extra.signal, ...options }) as Promise<
          AnswerOf<T["route"]>
        >;
      return guarded(() => answer(parsed as ToolInput<T>, { ...deps, call, extra }));
    },
  );
}
