import { readFileSync } from "node:fs";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { SwarmClient } from "../client/swarm-client.ts";
import { SWARMD_ROOT } from "../harness/launch.ts";
import { registerRouteTools } from "./route-tools.ts";

/** How a session starts, for both servers: what the tools are for and the usual order of calls. */
const FLOW =
  "Tools for swarmd, a service running trees of sandboxed AI coding agents. Typical flow: swarm_create_run (spec + prompt) → swarm_watch_events or swarm_get_result (waitSeconds) on the root agent → swarm_spawn_agent / swarm_prompt_agent / swarm_steer_agent as needed → swarm_delete_run when done. Tool calls a spec's approve rules hold wait for swarm_resolve_permission (see swarm_list_permissions).";

/** An MCP server named for swarmd, with `instructions` after the flow of calls, and no tools yet. */
export function swarmdMcpServer(instructions: string): McpServer {
  return new McpServer(
    { name: "swarmd", title: "swarmd tool bridge", version: packageVersion() },
    { instructions: `${FLOW} ${instructions}`.trim() },
  );
}

/**
 * The MCP server the daemon serves at `/mcp` (spec 4.14), one per session: the route tools of
 * src/api/tools.ts, and none of the local ones (starting a daemon, saved specs: they act on the
 * machine of a stdio bridge, not the daemon's). Without saved specs the tools take no `specName`.
 * `client` reaches the daemon's routes, the same ones a stdio bridge calls.
 */
export function createRouteServer(deps: { client: SwarmClient }): McpServer {
  const server = swarmdMcpServer("Agent specs are given inline (spec): this server keeps no saved specs.");
  registerRouteTools(server, { client: deps.client });
  return server;
}

let version: string | undefined;

function packageVersion(): string {
  if (version === undefined) {
    const pkg = JSON.parse(readFileSync(join(SWARMD_ROOT, "package.json"), "utf8")) as { version?: string };
    version = pkg.version ?? "0.0.0";
  }
  return version;
}
