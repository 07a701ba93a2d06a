import { randomUUID } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SwarmError } from "../../errors.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";

/** Throw `INVALID_INPUT_NAME` unless every name is one plain file name. */
export function assertInputNames(names: string[]): void {
  for (const name of names) {
    const plain = name.length > 0 && name !== "." && name !== ".." && !name.includes("/") && !name.includes("\0") && Buffer.byteLength(name) <= 255;
    if (!plain) throw new SwarmError("INVALID_INPUT_NAME", `input name ${JSON.stringify(name)} is not a plain file name`);
  }
}

/**
 * Write input files. Each is written beside `inputs/` and renamed into it, so an agent reading
 * /inputs while results arrive sees an old file or a whole new one, never half of one.
 */
export async function writeInputFiles(layout: SandboxLayout, files: Record<string, string>, signal: AbortSignal): Promise<void> {
  assertInputNames(Object.keys(files));
  await mkdir(layout.staging, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    signal.throwIfAborted();
    const staged = join(layout.staging, `${randomUUID()}.tmp`);
    await writeFile(staged, content, "utf8");
    await rename(staged, join(layout.inputs, name));
  }
}
