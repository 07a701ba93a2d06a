#!/bin/sh
//bin/true; node="$("$(dirname "$(readlink -f "$0")")/../scripts/node.sh" --quiet)" || exit; exec "$node/node" "$(readlink -f "$0")" "$@"
// The line above is sh's (the kernel starts this file with /bin/sh: an MCP client's `command`, a
// `make link` shim, any cwd and PATH): it execs this file under swarmd's Node 24 (scripts/node.sh),
// never a machine's older node. To node it is a comment.
// `swarm`: the operator CLI (src/cli/main.ts) run in place through tsx's loader, registered in
// this process so stdio, signals and the exit code are the CLI's own (no second process).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main(process.argv.slice(2));
