import { dirname, join } from "node:path";
import type Docker from "dockerode";
import { errorMessage, SwarmError } from "../../errors.ts";
import { attachUserNet, stopUserNet, userNetUnavailable } from "../network/user-net.ts";
import type { SandboxFolders } from "./sandbox-folder.ts";

/**
 * Give a started container (NetworkMode none) its user-mode network, before any harness runs in
 * it: the host's addresses prohibited in its namespace, then slirp4netns attached to it (through
 * docker-init's host pid). slirp4netns runs detached on the host, outside the container, so it
 * outlives a service restart; its pid goes into the sandbox record and `releaseContainerNetwork`
 * ends it when the sandbox is closed (the engine knows nothing of it). Throws
 * `SANDBOX_PROVISION_FAILED`, leaving no slirp4netns behind; the caller removes the container.
 */
export async function attachContainerNetwork(
  container: Docker.Container,
  sandboxId: string,
  folders: SandboxFolders,
  signal: AbortSignal,
): Promise<void> {
  const fail = (why: string, cause?: unknown) =>
    new SwarmError("SANDBOX_PROVISION_FAILED", `Sandbox ${sandboxId}'s network: ${why}`, { cause });
  const missing = userNetUnavailable();
  if (missing !== undefined) throw fail(missing);
  const { State } = await container.inspect();
  if (!State.Running || !State.Pid) throw fail(`its container is ${State.Status}`);
  const logFile = join(dirname(folders.controlDir(sandboxId)), "user-net.log");
  const userNet = await attachUserNet({ sandboxId, targetPid: State.Pid, logFile, signal }).catch((err: unknown) => {
    if (signal.aborted) throw signal.reason;
    throw fail(errorMessage(err), err);
  });
  try {
    const record = await folders.read(sandboxId);
    if (!record) throw new Error("its folder vanished");
    await folders.update({ ...record, userNet });
  } catch (err) {
    await stopUserNet(sandboxId, userNet);
    throw fail(errorMessage(err), err);
  }
}

/** End the sandbox's slirp4netns, recorded or not (a service may have died before recording it). */
export async function releaseContainerNetwork(sandboxId: string, folders: SandboxFolders): Promise<void> {
  const record = await folders.read(sandboxId).catch(() => undefined);
  await stopUserNet(sandboxId, record?.userNet);
}
