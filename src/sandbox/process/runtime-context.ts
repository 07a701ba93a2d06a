import { SwarmError } from "../../errors.ts";
import type { HostForks } from "../host/host-forks.ts";
import type { KeyedLock } from "../keyed-lock.ts";
import { LOCAL_NODE_ID, type SandboxInfo } from "../runtime.ts";
import { type CgroupHierarchy, createCgroupFreezer } from "./cgroup-freezer.ts";
import { type ControllerHome, limitEvents } from "./cgroup-limits.ts";
import type { Freezer } from "./freezer.ts";
import type { Launcher } from "./launcher.ts";
import type { SandboxEtc } from "./sandbox-etc.ts";
import { isValidSandboxId, type SandboxLayout, sandboxLayout } from "./sandbox-layout.ts";
import { type FreezerKind, readRecord, readRecordSync, type SandboxRecord } from "./sandbox-record.ts";
import { createSignalFreezer } from "./signal-freezer.ts";

/** What the process runtime decided at creation, shared by its operations. */
export interface RuntimeContext {
  /** Absolute, symlink-free. */
  dataDir: string;
  /** The bwrap binary when it works here (also serves sandboxes made by an earlier service). */
  bwrap: string | undefined;
  /** The /etc bubblewrap sandboxes see, kept under `<dataDir>/etc` (made whenever bwrap works here). */
  etc: SandboxEtc | undefined;
  /** Isolation for new sandboxes. */
  isolation: "bubblewrap" | "none";
  /** Whether new sandboxes get users of their own (bubblewrap started by root: see sandbox-users.ts). */
  separateUsers: boolean;
  /** Freezer for new sandboxes, and the hierarchy their cgroups go under. */
  freezer: FreezerKind;
  hierarchy: CgroupHierarchy | undefined;
  /** Where the pids, memory and CPU limits of new sandboxes are enforced (none when unisolated). */
  limitHomes: ControllerHome[];
  harnessStartTimeoutMs: number;
  /** One operation at a time per sandbox id. */
  lock: KeyedLock;
  /** Fork points and fork children's layers under `<dataDir>/forks/`. */
  forks: HostForks;
  /** Starts harnesses from a small process instead of the daemon's (launcher.ts); none: the daemon spawns them. */
  launcher?: Launcher;
}

/** The layout of an id that may name a sandbox, or `undefined` for one that cannot. */
export function layoutOf(ctx: RuntimeContext, sandboxId: string): SandboxLayout | undefined {
  return isValidSandboxId(sandboxId) ? sandboxLayout(ctx.dataDir, sandboxId) : undefined;
}

export async function findRecord(
  ctx: RuntimeContext,
  sandboxId: string,
): Promise<{ layout: SandboxLayout; record: SandboxRecord } | undefined> {
  const layout = layoutOf(ctx, sandboxId);
  const record = layout && (await readRecord(layout));
  return layout && record ? { layout, record } : undefined;
}

/** The sandbox's record, or `SANDBOX_NOT_FOUND`. */
export async function ownedRecord(
  ctx: RuntimeContext,
  sandboxId: string,
): Promise<{ layout: SandboxLayout; record: SandboxRecord }> {
  const found = await findRecord(ctx, sandboxId);
  if (!found) throw notFound(ctx, sandboxId);
  return found;
}

const notFound = (ctx: RuntimeContext, sandboxId: string) =>
  new SwarmError("SANDBOX_NOT_FOUND", `no sandbox ${sandboxId} in ${ctx.dataDir}`);

/** The freezer the sandbox was made with (a restarted service may have chosen differently since). */
export function freezerOf(record: SandboxRecord): Freezer {
  if (record.freezer === "signal")
    return createSignalFreezer({ sandboxId: record.sandboxId, poolTag: record.tag, rootPid: record.harness?.pid });
  if (record.cgroupDir === undefined) throw new Error(`sandbox ${record.sandboxId} has a cgroup freezer but no cgroup`);
  return createCgroupFreezer(record.freezer, record.cgroupDir);
}

/**
 * `gone` once the harness was started and no process of the sandbox is left; a sandbox whose
 * harness was never started has no processes yet and counts as `running`; one whose harness was
 * ended by a hibernation is `hibernated`.
 */
export async function statusOf(record: SandboxRecord): Promise<SandboxInfo["status"]> {
  if (record.harness === undefined) return record.hibernatedAt === undefined ? "running" : "hibernated";
  const freezer = freezerOf(record);
  if ((await freezer.members()).length === 0) return "gone";
  return (await freezer.isFrozen()) ? "frozen" : "running";
}

export async function infoOf(record: SandboxRecord): Promise<SandboxInfo> {
  const status = await statusOf(record);
  const reason = status === "gone" ? goneReason(record) : undefined;
  return {
    sandboxId: record.sandboxId,
    runId: record.runId,
    agentId: record.agentId,
    status,
    ...(reason ? { reason } : {}),
    node: LOCAL_NODE_ID,
  };
}

/** What a limit did to a sandbox whose processes are gone, from the record and the kernel's counters. */
function goneReason(record: SandboxRecord): string | undefined {
  if (record.stoppedFor) return record.stoppedFor;
  const limits = record.limits;
  const { oomKills, forksRefused } = limitEvents(record.limitCgroups ?? []);
  if (oomKills > 0)
    return `its sandbox ran out of memory (limit ${limits?.memoryMiB ?? "?"} MiB) and the kernel killed its harness`;
  if (forksRefused > 0) return `its sandbox hit its process limit (${limits?.pids ?? "?"} processes)`;
  return undefined;
}

/**
 * The record of a sandbox whose processes are not gone: else `SANDBOX_NOT_FOUND` / `SANDBOX_GONE`.
 * Read in one turn of the event loop, record and kernel files alike: this is a pause's and a
 * resume's path, and with 1,000 agents starting, the thread-pool reads it made took 40-200 ms.
 */
export async function liveRecord(
  ctx: RuntimeContext,
  sandboxId: string,
): Promise<{ layout: SandboxLayout; record: SandboxRecord }> {
  const layout = layoutOf(ctx, sandboxId);
  const record = layout && readRecordSync(layout);
  if (!layout || !record) throw notFound(ctx, sandboxId);
  const found = { layout, record };
  if ((await statusOf(found.record)) === "gone")
    throw new SwarmError("SANDBOX_GONE", `the processes of sandbox ${sandboxId} are gone`);
  return found;
}

/** A signal that never aborts, for undoing steps that must finish even when the call was aborted. */
export const UNABORTABLE: AbortSignal = new AbortController().signal;
