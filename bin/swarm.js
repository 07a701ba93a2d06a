#!/usr/bin/env node
// `swarm`: the operator CLI (src/cli/main.ts) run in place through tsx's loader, registered in
// this process so stdio, signals and the exit code are the CLI's own (no second process).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main(process.argv.slice(2));
