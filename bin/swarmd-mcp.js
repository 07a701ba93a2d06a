#!/bin/sh
//bin/true; node="$("$(dirname "$(readlink -f "$0")")/../scripts/node.sh" --quiet)" || exit; exec "$node/node" "$(readlink -f "$0")" "$@"
// The line above is sh's (the kernel starts this file with /bin/sh: an MCP client's `command`, a
// `make link` shim, any cwd and PATH): it execs this file under swarmd's Node 24 (scripts/node.sh),
// never a machine's older node. To node it is a comment.
// `swarmd-mcp`: the tool bridge alone (same as `swarm mcp`), for chat clients' server configuration.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main(["mcp", ...process.argv.slice(2)]);
