import { readFileSync } from "node:fs";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { SpecStore } from "../client/spec-store.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import { SWARMD_ROOT } from "../harness/launch.ts";
import { registerLocalTools } from "./local-tools.ts";
import { registerRouteTools } from "./route-tools.ts";

export interface BridgeDeps {
  client: SwarmClient;
  specs: SpecStore;
  /** Read by `swarm_start_service` (SWARM_RUNTIME, SWARM_DATA_DIR, SWARM_TOKEN, DOCKER_HOST, ...). */
  env: NodeJS.ProcessEnv;
}

/**
 * The MCP server of spec 4.14, not yet connected to a transport. It holds no state of its own:
 * every tool is one or a few calls to the service (the source of truth), or a local file operation.
 * The route tools are those of src/api/tools.ts; the local ones are in local-tools.ts.
 */
export function createBridgeServer(deps: BridgeDeps): McpServer {
  const server = new McpServer(
    { name: "swarmd", title: "swarmd tool bridge", version: packageVersion() },
    {
      instructions:
        "Tools for swarmd, a service running trees of sandboxed AI coding agents. Typical flow: swarm_create_run (spec + prompt) → swarm_watch_events or swarm_get_result (waitSeconds) on the root agent → swarm_spawn_agent / swarm_prompt_agent / swarm_steer_agent as needed → swarm_delete_run when done. Tool calls a spec's approve rules hold wait for swarm_resolve_permission (see swarm_list_permissions). If calls fail because the service is unreachable, swarm_start_service starts it.",
    },
  );
  const tools = { client: deps.client, specs: deps.specs };
  registerRouteTools(server, tools);
  registerLocalTools(server, tools, deps.env);
  return server;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(SWARMD_ROOT, "package.json"), "utf8")) as { version?: string };
  return pkg.version ?? "0.0.0";
}
