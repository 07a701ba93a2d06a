import type Docker from "dockerode";
import { SwarmError } from "../../errors.ts";
import { VOLUME_TARGETS } from "./sandbox-service.ts";

/**
 * A child's /work on its parent's node: the node's engine copies the parent's volume into the
 * child's with a short-lived container that mounts both (busybox `cp -a`: owners, modes and
 * links kept; links are copied as links, never followed). Nothing crosses the network.
 */
export async function copyOnNode(
  docker: Docker,
  options: { image: string; from: string; to: string; labels: Record<string, string> },
): Promise<void> {
  const container = await docker.createContainer({
    Image: options.image,
    Entrypoint: [],
    Cmd: ["cp", "-a", "/from/.", "/to/"],
    User: "0:0",
    Labels: options.labels,
    NetworkDisabled: true,
    HostConfig: {
      Binds: [`${options.from}:/from:ro`, `${options.to}:/to`],
      NetworkMode: "none",
      ReadonlyRootfs: true,
      CapDrop: ["ALL"],
      // To read what the agent made unreadable to itself, and to give the copies its owner.
      CapAdd: ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"],
      SecurityOpt: ["no-new-privileges"],
    },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0) {
      const log = (await container.logs({ stdout: true, stderr: true })) as unknown as Buffer;
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `Copying /work on the node failed (exit ${StatusCode}): ${log.toString("utf8").slice(-500)}`,
      );
    }
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

/**
 * A child's /work on another node: the parent's node engine streams /work as a tar archive
 * straight into the child's container on its own node (no copy held in the daemon: the two
 * streams are piped with back-pressure).
 */
export async function copyAcrossNodes(
  from: { docker: Docker; containerId: string },
  to: { docker: Docker; containerId: string },
): Promise<void> {
  const archive = (await from.docker
    .getContainer(from.containerId)
    .getArchive({ path: `${VOLUME_TARGETS.work}/.` })) as NodeJS.ReadableStream;
  await to.docker.getContainer(to.containerId).putArchive(archive, { path: VOLUME_TARGETS.work });
}
