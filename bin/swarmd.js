#!/usr/bin/env node
// `swarmd`: the daemon (src/main.ts, what `make run` starts) run in place through tsx's loader.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
