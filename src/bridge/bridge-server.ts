import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { SpecStore } from "../client/spec-store.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import { registerLocalTools } from "./local-tools.ts";
import { swarmdMcpServer } from "./route-server.ts";
import { registerRouteTools } from "./route-tools.ts";

export interface BridgeDeps {
  client: SwarmClient;
  specs: SpecStore;
  /** Read by `swarm_start_service` (SWARM_RUNTIME, SWARM_DATA_DIR, SWARM_TOKEN, DOCKER_HOST, ...). */
  env: NodeJS.ProcessEnv;
}

/**
 * The MCP server of spec 4.14 on stdio (`swarm mcp`), not yet connected to a transport. It holds no
 * state of its own: every tool is one or a few calls to the service (the source of truth), or a
 * local file operation. The route tools are those of src/api/tools.ts, as the daemon's own `/mcp`
 * serves them (route-server.ts); the local ones are in local-tools.ts.
 */
export function createBridgeServer(deps: BridgeDeps): McpServer {
  const server = swarmdMcpServer("If calls fail because the service is unreachable, swarm_start_service starts it.");
  const tools = { client: deps.client, specs: deps.specs };
  registerRouteTools(server, tools);
  registerLocalTools(server, tools, deps.env);
  return server;
}
