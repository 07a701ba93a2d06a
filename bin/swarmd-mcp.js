#!/usr/bin/env node
// `swarmd-mcp`: the tool bridge alone (same as `swarm mcp`), for chat clients' server configuration.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main(["mcp", ...process.argv.slice(2)]);
