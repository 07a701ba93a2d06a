import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InMemoryFs } from "just-bash";
import { SwarmError } from "../../errors.ts";
import { createKeyedLock, type KeyedLock } from "../keyed-lock.ts";
import type { SandboxInfo } from "../runtime.ts";
import type { FreezeGate } from "./freeze-gate.ts";
import type { MemoryHarness } from "./memory-harness.ts";

/** One sandbox of the memory runtime: a record in this process, no process of its own. */
export interface MemorySandbox {
  sandboxId: string;
  runId: string;
  agentId: string;
  spec: Record<string, unknown>;
  env: Record<string, string>;
  files: InMemoryFs;
  gate: FreezeGate;
  /** Set once started, until the sandbox is closed or its harness shut down. */
  harness?: MemoryHarness;
  /** Its harness shut down by itself (a `shutdown` command): the sandbox is `gone`. */
  gone: boolean;
}

/**
 * What the memory runtime owns, kept apart from the runtime so that a second runtime can take it
 * over, as a restarted service's runtime takes over its data folder.
 */
export interface SandboxTable {
  /** Temporary folder holding each started sandbox's control folder: its Unix sockets, nothing else. */
  readonly root: string;
  readonly sandboxes: Map<string, MemorySandbox>;
  /** One call at a time per sandbox (a close never interleaves with a start or a freeze). */
  readonly lock: KeyedLock;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `sandboxId` has the shape of a sandbox id (a UUID), and so is safe in a path. */
export const isSandboxId = (sandboxId: string) => UUID.test(sandboxId);

/** A sandbox's control folder (it holds its sockets once the harness started), or `SANDBOX_NOT_FOUND`. */
export function controlDirOf(table: SandboxTable, sandboxId: string): string {
  if (!isSandboxId(sandboxId)) throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(sandboxId)} is not a sandbox id`);
  return join(table.root, sandboxId);
}

export function createSandboxTable(): SandboxTable {
  return { root: mkdtempSync(join(tmpdir(), "swarmd-memory-")), sandboxes: new Map(), lock: createKeyedLock() };
}

export function infoOf(sandbox: MemorySandbox): SandboxInfo {
  const info: SandboxInfo = { sandboxId: sandbox.sandboxId, runId: sandbox.runId, agentId: sandbox.agentId, status: "running" };
  if (sandbox.gone) return { ...info, status: "gone", reason: "its harness shut down" };
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
