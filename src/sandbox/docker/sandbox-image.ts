import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SWARMD_ROOT } from "../../harness/launch.ts";

/** The image `make sandbox-image` builds: `swarmd-sandbox:<package.json version>`. */
export function defaultSandboxImage(): string {
  const { version } = JSON.parse(readFileSync(join(SWARMD_ROOT, "package.json"), "utf8")) as { version: string };
  return `swarmd-sandbox:${version}`;
}
