import { randomUUID } from "node:crypto";
import { rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import { UserNetProcessSchema } from "../network/user-net.ts";
import { isRefusedControlFile, readControlFile, readControlFileSync } from "../safe-read.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";

/** Far above any record written here (the spec's env is the only part of any size). */
const MAX_RECORD_BYTES = 4 * 1024 * 1024;

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
  /**
   * A second `SWARMD_SANDBOX` its processes may carry: the harness of a sandbox taken from the pool
   * keeps its pool id's until it is started again (its tools carry `sandboxId`). The signal freezer
   * finds them by either.
   */
  tag: z.string().optional(),
  /** The sandbox's own cgroup (cgroup freezers only). */
  cgroupDir: z.string().optional(),
  /** Resource limits (absent in records made before limits existed: the defaults apply). */
  limits: z
    .object({ pids: z.number(), memoryMiB: z.number(), cpus: z.number(), diskMiB: z.number(), tmpMiB: z.number() })
    .optional(),
  /** The cgroups that bound its pids, memory and CPU (one per hierarchy), made when the harness starts. */
  limitCgroups: z
    .array(
      z.object({
        controller: z.enum(["pids", "memory", "cpu"]),
        version: z.union([z.literal(1), z.literal(2)]),
        dir: z.string(),
      }),
    )
    .optional(),
  /** The sandbox's agent and harness users (sandbox-users.ts); absent: both run as the daemon's user. */
  users: z.object({ agent: z.number().int().positive(), harness: z.number().int().positive() }).optional(),
  /** Set when the runtime stopped the sandbox for breaking a limit (the disk watch): what its agent's end says. */
  stoppedFor: z.string().optional(),
  /** When its harness was ended by a hibernation (cleared when started again): not `gone` either. */
  hibernatedAt: z.string().optional(),
  /** Absent until the harness was started: such a sandbox has no processes yet and is not `gone`. */
  harness: z.object({ pid: z.number().int().positive(), startedAt: z.string() }).optional(),
  /** The slirp4netns of a networked sandbox, once its harness started (stopped on close). */
  userNet: UserNetProcessSchema.optional(),
});

/**
 * The ownership record, `<sandbox>/sandbox.json`: what a service (this one or a restarted one)
 * needs to recognise the sandbox as its own and find its processes again.
 */
export type SandboxRecord = z.infer<typeof SandboxRecordSchema>;

/** The record, or `undefined` when the folder holds none (not owned, or half-made). */
export async function readRecord(layout: SandboxLayout): Promise<SandboxRecord | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readControlFile(layout.record, MAX_RECORD_BYTES);
  } catch (err) {
    return notARecord(err);
  }
  return parseRecord(bytes);
}

/** `readRecord` in one turn of the event loop, for a control's path (see `readControlFileSync`). */
export function readRecordSync(layout: SandboxLayout): SandboxRecord | undefined {
  let bytes: Buffer;
  try {
    bytes = readControlFileSync(layout.record, MAX_RECORD_BYTES);
  } catch (err) {
    return notARecord(err);
  }
  return parseRecord(bytes);
}

function notARecord(err: unknown): undefined {
  // A symlink, FIFO or oversized file is not a record this service wrote.
  if (isMissing(err) || isRefusedControlFile(err)) return undefined;
  throw err;
}

function parseRecord(bytes: Buffer): SandboxRecord | undefined {
  const parsed = SandboxRecordSchema.safeParse(JSON.parse(bytes.toString("utf8")));
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
