import type Docker from "dockerode";
import { SwarmError } from "../../errors.ts";
import { DEFAULT_SANDBOX_LIMITS, LOCAL_NODE_ID, type ProvisionRequest, type SandboxInfo } from "../runtime.ts";
import { attachContainerNetwork, releaseContainerNetwork } from "./container-network.ts";
import { containerOptions, MiB } from "./container-options.ts";
import { engineStatus } from "./engine.ts";
import { execRunning } from "./harness-exec.ts";
import { containerNameOf, LABEL, SANDBOX_ID, sandboxLabels, statusOfState } from "./labels.ts";
import type { SandboxFolders, SandboxRecord } from "./sandbox-folder.ts";

export interface ContainerSettings {
  owner: string;
}

/** A container of ours as the runtime sees it. */
export interface OwnedContainer {
  container: Docker.Container;
  info: SandboxInfo;
  /** The image it was created from (an image id once inspected); a fork's child is created from it too. */
  image: string;
  /** The sandbox's host record, read once with the container (absent when its folder vanished). */
  record?: SandboxRecord;
}

/** Finding, creating and removing the containers (and fork images) of one data folder. */
export interface SandboxContainers {
  /** Our container for the sandbox, whatever its state; undefined when there is none. */
  find(sandboxId: string): Promise<OwnedContainer | undefined>;
  /** Our running or frozen container: `SANDBOX_GONE` when it stopped or vanished, `SANDBOX_NOT_FOUND` when unknown. */
  live(sandboxId: string): Promise<OwnedContainer>;
  /** Create and start the sandbox's container from `image`. */
  createAndStart(req: ProvisionRequest, image: string, signal: AbortSignal): Promise<OwnedContainer>;
  /** Every sandbox of this data folder: its containers in any state, and folders whose container vanished (`gone`). */
  list(): Promise<SandboxInfo[]>;
  /** The CPU and memory limits the engine applies to each live (not `gone`) sandbox of this data folder. */
  liveLimits(): Promise<{ cpus: number; memoryMiB: number }[]>;
  /** Remove the container, its folder and any fork image (earlier versions forked through `docker commit`); whatever is already gone is fine. */
  remove(sandboxId: string): Promise<void>;
}

export function sandboxContainers(
  docker: Docker,
  folders: SandboxFolders,
  settings: ContainerSettings,
): SandboxContainers {
  const { owner } = settings;
  const ownedBy = [`${LABEL.owner}=${owner}`];
  const byName = (sandboxId: string) => docker.getContainer(containerNameOf(owner, sandboxId));

  /**
   * A sandbox lives as long as its container runs and, once its harness was started, as long as
   * the harness does: a harness that exited leaves an idle container that is of no use (gone).
   */
  const statusOf = async (state: string, record: SandboxRecord | undefined): Promise<SandboxInfo["status"]> => {
    const status = statusOfState(state);
    if (status !== "gone" && record?.hibernatedAt !== undefined && !record.harnessExecId) return "hibernated";
    if (status === "gone" || !record?.harnessExecId) return status;
    return (await execRunning(docker, record.harnessExecId)) ? status : "gone";
  };

  const find = async (sandboxId: string): Promise<OwnedContainer | undefined> => {
    if (!SANDBOX_ID.test(sandboxId)) return undefined;
    const container = byName(sandboxId);
    try {
      const { Config, State, Image } = await container.inspect();
      const labels = Config.Labels ?? {};
      if (labels[LABEL.owner] !== owner) return undefined;
      const record = await folders.read(sandboxId);
      const status = await statusOf(State.Status, record);
      const info = {
        sandboxId,
        runId: labels[LABEL.run] ?? "",
        agentId: labels[LABEL.agent] ?? "",
        status,
        ...(status === "gone" && record?.stoppedFor ? { reason: record.stoppedFor } : {}),
        node: LOCAL_NODE_ID,
      };
      return { container, info, image: Image, record };
    } catch (err) {
      if (engineStatus(err) === 404) return undefined;
      throw err;
    }
  };

  const ignoreGone = (err: unknown) => {
    // 404: already removed; 409: removal already in progress, or an image other images build on
    // (untagging it is enough: the engine prunes it with the last image that needs it).
    const status = engineStatus(err);
    if (status !== 404 && status !== 409 && status !== 304) throw err;
  };

  const list = async (): Promise<SandboxInfo[]> => {
    const found = await docker.listContainers({ all: true, filters: { label: ownedBy } });
    const records = new Map((await folders.list()).map((r) => [r.sandboxId, r]));
    const infos: SandboxInfo[] = await Promise.all(
      found.map(async (c) => {
        const sandboxId = c.Labels[LABEL.sandbox] ?? "";
        const status = await statusOf(c.State, records.get(sandboxId));
        return {
          sandboxId,
          runId: c.Labels[LABEL.run] ?? "",
          agentId: c.Labels[LABEL.agent] ?? "",
          status,
          node: LOCAL_NODE_ID,
        };
      }),
    );
    const withContainer = new Set(infos.map((i) => i.sandboxId));
    for (const r of records.values()) {
      if (!withContainer.has(r.sandboxId))
        infos.push({ sandboxId: r.sandboxId, runId: r.runId, agentId: r.agentId, status: "gone", node: LOCAL_NODE_ID });
    }
    return infos;
  };

  return {
    find,
    async live(sandboxId) {
      const found = await find(sandboxId);
      if (found && found.info.status !== "gone") return found;
      if (found) throw new SwarmError("SANDBOX_GONE", `Sandbox ${sandboxId}'s container is no longer running.`);
      if (SANDBOX_ID.test(sandboxId) && (await folders.read(sandboxId))) {
        throw new SwarmError("SANDBOX_GONE", `Sandbox ${sandboxId}'s container vanished.`);
      }
      throw new SwarmError("SANDBOX_NOT_FOUND", `No sandbox ${sandboxId}.`);
    },
    async createAndStart(req, image, signal) {
      const options = containerOptions({
        name: containerNameOf(owner, req.sandboxId),
        image,
        labels: sandboxLabels(owner, req),
        controlDir: folders.controlDir(req.sandboxId),
        workDir: folders.workDir(req.sandboxId),
        inputsDir: folders.inputsDir(req.sandboxId),
        limits: req.limits ?? DEFAULT_SANDBOX_LIMITS,
      });
      // No abortSignal on calls that create things: an aborted request may still complete in the
      // engine after our clean-up ran. The signal is checked between steps instead.
      let container: Docker.Container;
      try {
        container = await docker.createContainer(options);
      } catch (err) {
        if (engineStatus(err) === 404) {
          throw new SwarmError(
            "SANDBOX_PROVISION_FAILED",
            `Image ${image} is not on this Docker engine (swarmd never pulls): build it with \`make sandbox-image\`.`,
            { cause: err },
          );
        }
        throw err;
      }
      signal.throwIfAborted();
      await container.start();
      signal.throwIfAborted();
      if (req.network === true) await attachContainerNetwork(container, req.sandboxId, folders, signal);
      return {
        container,
        image,
        info: {
          sandboxId: req.sandboxId,
          runId: req.runId,
          agentId: req.agentId,
          status: "running",
          node: LOCAL_NODE_ID,
        },
      };
    },
    list,
    async liveLimits() {
      const live = (await list()).filter((i) => i.status !== "gone");
      const limits = await Promise.all(
        live.map(async ({ sandboxId }) => {
          try {
            const { HostConfig } = await byName(sandboxId).inspect();
            return [{ cpus: (HostConfig.NanoCpus ?? 0) / 1e9, memoryMiB: (HostConfig.Memory ?? 0) / MiB }];
          } catch (err) {
            if (engineStatus(err) === 404) return []; // removed since the listing
            throw err;
          }
        }),
      );
      return limits.flat();
    },
    async remove(sandboxId) {
      if (!SANDBOX_ID.test(sandboxId)) return;
      await byName(sandboxId).remove({ force: true, v: true }).catch(ignoreGone);
      await releaseContainerNetwork(sandboxId, folders);
      const images = await docker.listImages({ filters: { label: [...ownedBy, `${LABEL.sandbox}=${sandboxId}`] } });
      for (const image of images) {
        const tags = (image.RepoTags ?? []).filter((t) => t !== "<none>:<none>");
        for (const ref of tags.length > 0 ? tags : [image.Id]) await docker.getImage(ref).remove().catch(ignoreGone);
      }
      await folders.remove(sandboxId);
    },
  };
}
