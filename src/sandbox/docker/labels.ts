import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import type { SandboxInfo } from "../runtime.ts";

/** Labels on every container the docker runtime creates (and on fork images of earlier versions). */
export const LABEL = {
  run: "swarmd.run",
  agent: "swarmd.agent",
  sandbox: "swarmd.sandbox",
  /** Id of the data folder that owns it: a second data folder never touches our containers. */
  owner: "swarmd.owner",
} as const;

/** Sandbox ids become container names, image tags and folder names: keep them to safe characters. */
export const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/**
 * A stable id of the data folder: its real path, hashed. Containers bind-mount absolute paths
 * below it, so a moved data folder could not use them anyway.
 */
export function ownerIdOf(dataDir: string): string {
  return createHash("sha256").update(realpathSync(dataDir)).digest("hex").slice(0, 16);
}

export function containerNameOf(owner: string, sandboxId: string): string {
  return `swarmd-${owner}-${sandboxId}`;
}

export function sandboxLabels(
  owner: string,
  ids: { sandboxId: string; runId: string; agentId: string },
): Record<string, string> {
  return { [LABEL.owner]: owner, [LABEL.sandbox]: ids.sandboxId, [LABEL.run]: ids.runId, [LABEL.agent]: ids.agentId };
}

/** The runtime's view of a container state: a paused container is frozen; a stopped one is gone. */
export function statusOfState(state: string): SandboxInfo["status"] {
  if (state === "running") return "running";
  if (state === "paused") return "frozen";
  return "gone";
}
