import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { SessionEntry, SessionManager } from "@mariozechner/pi-coding-agent";
import type { InMemoryFs } from "just-bash";
import { SwarmError } from "../../errors.ts";
import type { EventLog } from "../../harness/event-log.ts";
import { createKeyedLock, type KeyedLock } from "../keyed-lock.ts";
import { type ForkSource, LOCAL_NODE_ID, type SandboxInfo, type SandboxLimits } from "../runtime.ts";
import type { FreezeGate } from "./freeze-gate.ts";
import type { MemoryHarness } from "./memory-harness.ts";

/** One sandbox of the simulated runtime: a record in this process, no process, file or socket of its own. */
export interface MemorySandbox {
  sandboxId: string;
  runId: string;
  agentId: string;
  spec: Record<string, unknown>;
  env: Record<string, string>;
  /** What the request asked for (nothing enforces them here); what `nodes()` counts as reserved. */
  limits: SandboxLimits;
  files: InMemoryFs;
  gate: FreezeGate;
  /** The harness's event log, kept across its starts (hibernation), so `hseq` goes on. */
  log: EventLog;
  /** pi's session, made at the first start and handed to every later one, so the conversation goes on. */
  session?: SessionManager;
  /** Set once started, until the sandbox is closed, hibernated or its harness shut down. */
  harness?: MemoryHarness;
  /** Its harness was ended by `hibernate`; the next start brings it back. */
  hibernated: boolean;
  /** Its harness shut down by itself (a `shutdown` command): the sandbox is `gone`. */
  gone: boolean;
  /** A fork child's fork point: its `/work` is kept after it closes, until its run is dropped. */
  fork?: ForkSource;
}

/** A fork point: a frozen copy of one sandbox's `/work` and of its conversation's branch then. */
export interface MemoryBase {
  runId: string;
  files: InMemoryFs;
  /** pi's session branch, root first; null when the harness never held a session. */
  session: SessionEntry[] | null;
}

/**
 * What the simulated runtime owns, kept apart from the runtime so that a second runtime can take
 * it over, as a restarted service's runtime takes over its data folder.
 */
export interface SandboxTable {
  /** The path under which each sandbox's in-memory control folder is named; nothing is made there. */
  readonly root: string;
  readonly sandboxes: Map<string, MemorySandbox>;
  /** Fork points by base id, kept until their run is dropped. */
  readonly bases: Map<string, MemoryBase>;
  /** The `/work` of fork children whose sandbox closed, by sandbox id, until their run is dropped. */
  readonly kept: Map<string, { runId: string; files: InMemoryFs }>;
  /** One call at a time per sandbox (a close never interleaves with a start or a freeze). */
  readonly lock: KeyedLock;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `sandboxId` has the shape of a sandbox id (a UUID), and so is safe in a path. */
export const isSandboxId = (sandboxId: string) => UUID.test(sandboxId);

/** The name of a sandbox's control folder (a key of the in-memory folders, never a folder on disk), or `SANDBOX_NOT_FOUND`. */
export function controlDirOf(table: SandboxTable, sandboxId: string): string {
  if (!isSandboxId(sandboxId))
    throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(sandboxId)} is not a sandbox id`);
  return join(table.root, sandboxId, "control");
}

export function createSandboxTable(): SandboxTable {
  return {
    root: `/swarmd-simulated/${randomUUID()}`,
    sandboxes: new Map(),
    bases: new Map(),
    kept: new Map(),
    lock: createKeyedLock(),
  };
}

export function infoOf(sandbox: MemorySandbox): SandboxInfo {
  const info: SandboxInfo = {
    sandboxId: sandbox.sandboxId,
    runId: sandbox.runId,
    agentId: sandbox.agentId,
    status: "running",
    node: LOCAL_NODE_ID,
  };
  if (sandbox.gone) return { ...info, status: "gone", reason: "its harness shut down" };
  if (sandbox.hibernated) return { ...info, status: "hibernated" };
  return sandbox.gate.frozen ? { ...info, status: "frozen" } : info;
}

/** The sandbox, or `SANDBOX_NOT_FOUND`. */
export function ownedSandbox(table: SandboxTable, sandboxId: string): MemorySandbox {
  const sandbox = table.sandboxes.get(sandboxId);
  if (!sandbox) throw new SwarmError("SANDBOX_NOT_FOUND", `sandbox ${sandboxId} does not exist`);
  return sandbox;
}

/** The sandbox, or `SANDBOX_NOT_FOUND` / `SANDBOX_GONE`. */
export function liveSandbox(table: SandboxTable, sandboxId: string): MemorySandbox {
  const sandbox = ownedSandbox(table, sandboxId);
  if (sandbox.gone) throw new SwarmError("SANDBOX_GONE", `sandbox ${sandboxId}: its harness shut down`);
  return sandbox;
}
