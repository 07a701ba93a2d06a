import { createHash } from "node:crypto";
import { chown } from "node:fs/promises";
import type { SandboxLayout } from "./sandbox-layout.ts";

/**
 * The two host users of an isolated sandbox: its agent's tools run as `agent`; its harness, its
 * control folder and socket belong to `harness`, which the agent can neither signal, trace nor
 * replace. Both are unprivileged and named by no account of the host.
 */
export interface SandboxUsers {
  agent: number;
  harness: number;
}

/** Sandbox users live in [2^30, 2^31), far above any account a Debian host hands out. */
const FIRST_UID = 2 ** 30;
const RUN_SLOTS = 2 ** 29;

/**
 * A run's users, derived from its id: every sandbox of one run shares them (a fork's copied files
 * stay its agent's own), and two runs differ unless their ids collide in 2^29 slots.
 */
export function usersForRun(runId: string): SandboxUsers {
  const slot = createHash("sha256").update(runId).digest().readUInt32BE(0) % RUN_SLOTS;
  const agent = FIRST_UID + 2 * slot;
  return { agent, harness: agent + 1 };
}

/** Hand the sandbox's folders to its users: work and inputs to the agent, control (and the spec in it) to the harness. */
export async function giveFolders(layout: SandboxLayout, users: SandboxUsers): Promise<void> {
  await Promise.all([chown(layout.work, users.agent, users.agent), chown(layout.inputs, users.agent, users.agent)]);
  await chown(layout.control, users.harness, users.harness);
  await chown(layout.spec, users.harness, users.harness);
}
