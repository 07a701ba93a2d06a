import { pathToFileURL } from "node:url";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { endpointFromEnv } from "../client/endpoint.ts";
import { createSpecStore, specsDir } from "../client/spec-store.ts";
import { createSwarmClient } from "../client/swarm-client.ts";
import { createBridgeServer } from "./bridge-server.ts";

/**
 * The tool bridge on stdio (`swarm mcp`, or `node --import tsx src/bridge/main.ts`), configured by
 * SWARM_URL, SWARM_TOKEN and SWARM_SPECS_DIR. stdout carries only the protocol; diagnostics go to
 * stderr. Resolves when the client closes stdin.
 */
export async function runBridge(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const endpoint = endpointFromEnv(env);
  const server = createBridgeServer({
    client: createSwarmClient(endpoint),
    specs: createSpecStore(specsDir(env)),
    env,
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await server.connect(transport);
  process.stdin.once("end", () => void server.close());
  console.error(`swarmd tool bridge on stdio, service ${endpoint.url} (${endpoint.source})`);
  await closed;
}

// Run directly (not imported by the CLI): start serving.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runBridge().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`swarm mcp: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
