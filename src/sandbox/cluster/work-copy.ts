import type Docker from "dockerode";
import { SwarmError } from "../../errors.ts";
import { bounded, ENGINE_CALL_MS, HELPER_LABEL, HELPER_RUN_MS, runHelper, withHelper, within } from "./node-helpers.ts";
import { VOLUME_TARGETS } from "./sandbox-service.ts";

export interface CopyOptions {
  image: string;
  /** Labels of the helper containers (the owner, the run). */
  labels: Record<string, string>;
  log: (message: string) => void;
  signal: AbortSignal;
}

/**
 * One volume into another on one node: the node's engine copies it with a short-lived container
 * that mounts both (busybox `cp -a`: owners, modes, times and links kept; links are copied as
 * links, never followed). Nothing crosses the network. The source is only read.
 */
export async function copyOnNode(
  docker: Docker,
  volumes: { from: string; to: string },
  options: CopyOptions,
): Promise<void> {
  await withHelper(
    docker,
    {
      image: options.image,
      cmd: ["cp", "-a", "/from/.", "/to/"],
      binds: [`${volumes.from}:/from:ro,nocopy`, `${volumes.to}:/to:nocopy`],
      labels: { ...options.labels, [HELPER_LABEL]: "copy" },
      // To read what the agent made unreadable to itself, and to give the copies its owner.
      capAdd: ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"],
    },
    options.log,
    async (helper) => {
      const { code, output } = await runHelper(helper, options.signal);
      if (code !== 0)
        throw new SwarmError(
          "SANDBOX_PROVISION_FAILED",
          `Copying /work on the node failed (exit ${code}): ${output.slice(-500)}`,
        );
    },
  );
}

/**
 * A /work onto another node: the source node's engine streams it as a tar archive (`source`: a
 * container that mounts it at /work, its sandbox's own or a helper's), straight into a helper on
 * the target node that mounts the target volume at /work (no copy held in the daemon: the two
 * streams are piped with back-pressure). The archive is of `/work` itself, so its entries are
 * named `work/...` and are put at the helper's root: an engine checks that no link of an archive
 * it unpacks points above where it unpacks it, and `/` is where nothing is above (a link
 * `../../x` in /work is the agent's to make). What is put outside the volume stays in the
 * helper's own layer, removed with it.
 */
export async function copyAcrossNodes(
  source: { docker: Docker; container: Docker.Container },
  target: { docker: Docker; volume: string },
  options: CopyOptions,
): Promise<void> {
  const signal = within(options.signal, HELPER_RUN_MS);
  await withHelper(
    target.docker,
    {
      image: options.image,
      binds: [`${target.volume}:${VOLUME_TARGETS.work}:nocopy`],
      labels: { ...options.labels, [HELPER_LABEL]: "copy" },
      writableRoot: true,
    },
    options.log,
    async (helper) => {
      const archive = await bounded(
        source.container.getArchive({
          path: VOLUME_TARGETS.work,
          abortSignal: signal,
        }) as Promise<NodeJS.ReadableStream>,
        ENGINE_CALL_MS,
        (late) => (late as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.(),
      );
      // The source failing halfway (its node cut off) ends the put too, which would wait for more.
      const cut = new AbortController();
      archive.on("error", (err: Error) => cut.abort(err));
      await helper.putArchive(archive, { path: "/", abortSignal: AbortSignal.any([signal, cut.signal]) });
      if (cut.signal.aborted) throw cut.signal.reason;
    },
  );
}
