import { randomUUID } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { SandboxLayout } from "./sandbox-layout.ts";

const FreezerKindSchema = z.enum(["cgroup-v2", "cgroup-v1", "signal"]);

/** How a sandbox's processes are found, frozen and killed. */
export type FreezerKind = z.infer<typeof FreezerKindSchema>;

const SandboxRecordSchema = z.object({
  version: z.literal(1),
  sandboxId: z.string(),
  runId: z.string(),
  agentId: z.string(),
  createdAt: z.string(),
  network: z.boolean(),
  /** Spec env, kept here because the harness starts later than provision (the file is 0600). */
  env: z.record(z.string(), z.string()),
  /** Decided at provision and kept, so a restarted service treats the sandbox as it was made. */
  isolation: z.enum(["bubblewrap", "none"]),
  freezer: FreezerKindSchema,
  /** The sandbox's own cgroup (cgroup freezers only). */
  cgroupDir: z.string().optional(),
  /** Absent until the harness was started: such a sandbox has no processes yet and is not `gone`. */
  harness: z.object({ pid: z.number().int().positive(), startedAt: z.string() }).optional(),
});

/**
 * The ownership record, `<sandbox>/sandbox.json`: what a service (this one or a restarted one)
 * needs to recognise the sandbox as its own and find its processes again.
 */
export type SandboxRecord = z.infer<typeof SandboxRecordSchema>;

/** The record, or `undefined` when the folder holds none (not owned, or half-made). */
export async function readRecord(layout: SandboxLayout): Promise<SandboxRecord | undefined> {
  let text: string;
  try {
    text = await readFile(layout.record, "utf8");
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  const parsed = SandboxRecordSchema.safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : undefined;
}

/** Replace the record atomically: a crash leaves the old or the new one, never half of one. */
export async function writeRecord(layout: SandboxLayout, record: SandboxRecord): Promise<void> {
  const temporary = `${layout.record}.${randomUUID()}.tmp`;
  await writeFile(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, layout.record);
}

export function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
