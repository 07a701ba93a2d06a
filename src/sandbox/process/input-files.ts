import { randomUUID } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxLayout } from "./sandbox-layout.ts";

/**
 * Write input files (names already checked with `assertInputNames`). Each is written beside
 * `inputs/` and renamed into it, so an agent reading /inputs while results arrive sees an old
 * file or a whole new one, never half of one.
 */
export async function writeInputFiles(
  layout: SandboxLayout,
  files: Record<string, string>,
  signal: AbortSignal,
): Promise<void> {
  await mkdir(layout.staging, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    signal.throwIfAborted();
    const staged = join(layout.staging, `${randomUUID()}.tmp`);
    await writeFile(staged, content, "utf8");
    await rename(staged, join(layout.inputs, name));
  }
}
