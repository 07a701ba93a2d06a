import { existsSync, mkdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { type ErrorCode, isSwarmError, SwarmError } from "../../errors.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import { copyTree } from "../copy-tree.ts";
import { measuredBytes, startDiskWatch } from "../disk-watch.ts";
import { applyHostChanges } from "../host/host-apply.ts";
import { HostForks } from "../host/host-forks.ts";
import { assertInputNames } from "../input-names.ts";
import { createKeyedLock } from "../keyed-lock.ts";
import { localNode } from "../local-node.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  LOCAL_NODE_ID,
  type ProvisionRequest,
  type SandboxInfo,
  type SandboxRuntime,
} from "../runtime.ts";
import { connectSocket, MAX_SOCKET_PATH_BYTES } from "../socket-connect.ts";
import { waitForHarness } from "../wait-for-harness.ts";
import { bytesWritten, overDiskLimit } from "../work-tree.ts";
import { HARNESS_USER, SANDBOX_USER } from "./container-options.ts";
import { type DockerEndpoint, engineError, openEngine } from "./engine.ts";
import { execHarness, execRunning, killHarness } from "./harness-exec.ts";
import { ownerIdOf, SANDBOX_ID } from "./labels.ts";
import { pauseContainer, pausedFor } from "./pause.ts";
import { type OwnedContainer, sandboxContainers } from "./sandbox-containers.ts";
import { type SandboxRecord, sandboxFolders } from "./sandbox-folder.ts";
import { defaultSandboxImage } from "./sandbox-image.ts";

export interface DockerRuntimeOptions {
  /** The data folder; sandboxes live in `<dataDir>/sandboxes/<sandboxId>/`. */
  dataDir: string;
  /** Default image (a request's `image` wins). Default `swarmd-sandbox:<package version>`. */
  image?: string;
  /** The engine. Default `DOCKER_HOST`, else `/var/run/docker.sock`. */
  docker?: DockerEndpoint;
  /** Pause between two rounds of the disk quota watch. Default 2 s. */
  diskWatchIntervalMs?: number;
  /** Where the disk watch says what it stopped. Default: standard error. */
  log?: (message: string) => void;
}

const HARNESS_START_TIMEOUT_MS = 60_000;

/**
 * The `docker` runtime: one container per sandbox, labelled with its run, agent, sandbox and the
 * owning data folder. See container-options.ts for why containers idle and the harness is exec'd.
 */
export function createDockerRuntime(options: DockerRuntimeOptions): SandboxRuntime {
  const root = join(options.dataDir, "sandboxes");
  mkdirSync(root, { recursive: true });
  const owner = ownerIdOf(options.dataDir);
  const engine = openEngine(options.docker);
  const { docker } = engine;
  const forks = new HostForks(
    options.dataDir,
    options.log ?? ((message) => process.stderr.write(`swarmd: ${message}\n`)),
  );
  const folders = sandboxFolders(root, (sandboxId, workDir) => forks.releaseChild(sandboxId, workDir));
  const containers = sandboxContainers(docker, folders, { owner });
  const defaultImage = options.image ?? defaultSandboxImage();
  /**
   * One call at a time per sandbox, so a second startHarness sees the first one's harness, and a
   * freeze or thaw never lands while a fork has the parent paused for its copy.
   */
  const serialized = createKeyedLock();

  /** Aborts reject with the signal's reason; engine failures become SwarmErrors. */
  const guarded = async <T>(signal: AbortSignal, code: ErrorCode, what: string, work: () => Promise<T>): Promise<T> => {
    signal.throwIfAborted();
    try {
      return await work();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw engineError(engine, err, code, what);
    }
  };

  /** Make the folder then the container; anything that fails after the folder exists removes both. */
  const create = async (req: ProvisionRequest, make: () => Promise<OwnedContainer>): Promise<SandboxInfo> => {
    if (!SANDBOX_ID.test(req.sandboxId))
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `Not a usable sandbox id: ${JSON.stringify(req.sandboxId)}.`);
    const socketPath = join(folders.controlDir(req.sandboxId), CONTROL_FILES.socket);
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `The harness socket path ${socketPath} is longer than Unix sockets allow; use a shorter data folder path.`,
      );
    }
    if (await containers.find(req.sandboxId))
      throw new SwarmError("SANDBOX_EXISTS", `Sandbox ${req.sandboxId} already exists.`);
    const record: SandboxRecord = {
      sandboxId: req.sandboxId,
      runId: req.runId,
      agentId: req.agentId,
      env: req.env ?? {},
      diskMiB: (req.limits ?? DEFAULT_SANDBOX_LIMITS).diskMiB,
    };
    await folders.create(record, req.spec);
    try {
      return (await make()).info;
    } catch (err) {
      await containers.remove(req.sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const provision = (req: ProvisionRequest, signal: AbortSignal) =>
    guarded(signal, "SANDBOX_PROVISION_FAILED", `Provisioning sandbox ${req.sandboxId} failed`, () =>
      create(req, () => containers.createAndStart(req, req.image ?? defaultImage, signal)),
    );

  /**
   * The child is created from the parent's image (the root file system is read-only, so the image
   * is all of it) with a copy of the parent's /work, taken while the parent is paused so the copy
   * is of one moment. Its /inputs starts empty like any sandbox's.
   */
  const fork = (parentSandboxId: string, req: ProvisionRequest, signal: AbortSignal) =>
    guarded(
      signal,
      "SANDBOX_PROVISION_FAILED",
      `Forking sandbox ${parentSandboxId} into ${req.sandboxId} failed`,
      async () => {
        const source = req.fork;
        // A fork child starts from its fork point (HostForks), in the image its parent has too.
        if (source)
          return create(req, async () => {
            const child = {
              sandboxId: req.sandboxId,
              work: folders.workDir(req.sandboxId),
              control: folders.controlDir(req.sandboxId),
            };
            await forks.makeChild(source, child, { harness: HARNESS_USER }, signal);
            return containers.createAndStart(req, req.image ?? defaultImage, signal);
          });
        const { image } = await containers.live(parentSandboxId);
        return create(req, async () => {
          await serialized(parentSandboxId, () =>
            whilePaused(parentSandboxId, () =>
              copyTree(folders.workDir(parentSandboxId), folders.workDir(req.sandboxId), signal),
            ),
          );
          signal.throwIfAborted();
          return containers.createAndStart(req, image, signal);
        });
      },
    );

  /** Run `work` with the sandbox paused, and leave it as it was (a frozen one stays frozen). */
  const whilePaused = async <T>(sandboxId: string, work: () => Promise<T>): Promise<T> => {
    const { container, info } = await containers.live(sandboxId);
    return pausedFor(container, info.status === "frozen", work);
  };

  const writeInputs = async (sandboxId: string, files: Record<string, string>, signal: AbortSignal) => {
    assertInputNames(Object.keys(files));
    await guarded(signal, "INTERNAL", `Writing inputs into sandbox ${sandboxId} failed`, async () => {
      await containers.live(sandboxId);
      await folders.writeInputs(sandboxId, files, signal);
    });
  };

  const startHarness = (sandboxId: string, signal: AbortSignal) =>
    serialized(sandboxId, () =>
      guarded(signal, "HARNESS_START_FAILED", `Starting the harness of sandbox ${sandboxId} failed`, async () => {
        const { container, info, record } = await containers.live(sandboxId);
        if (!record) throw new SwarmError("SANDBOX_GONE", `Sandbox ${sandboxId}'s folder vanished.`);
        const controlDir = folders.controlDir(sandboxId);
        const socketPath = join(controlDir, CONTROL_FILES.socket);
        const untilListening = (execId: string) =>
          waitForHarness(socketPath, {
            outputFile: join(controlDir, CONTROL_FILES.output),
            exited: async () => ((await execRunning(docker, execId)) ? undefined : "exited"),
            timeoutMs: HARNESS_START_TIMEOUT_MS,
            signal,
          });
        // A started harness whose exec ended makes the sandbox gone, so `live` found this one running.
        if (record.harnessExecId !== undefined) {
          // Already running: never probe a ready harness (a connection would replace the service's).
          if (existsSync(socketPath)) return;
          return untilListening(record.harnessExecId);
        }
        if (info.status === "frozen")
          throw new SwarmError(
            "HARNESS_START_FAILED",
            `Sandbox ${sandboxId} is frozen: thaw it before starting its harness.`,
          );
        const harnessExecId = await execHarness(container, controlDir, record.env);
        await folders.update({ ...record, harnessExecId, hibernatedAt: undefined });
        try {
          await untilListening(harnessExecId);
        } catch (err) {
          // A start that failed or was given up leaves the sandbox as provisioned, not gone.
          await killHarness(docker, container, harnessExecId).catch(() => undefined);
          await folders.update({ ...record, harnessExecId: undefined });
          throw err;
        }
      }),
    );

  /**
   * End an idle harness (see `SandboxRuntime.hibernate`): its exec is killed, the container keeps
   * its idle process and its folders (files, event log, pi's session file). Processes the agent
   * left running in the background outlive it, unlike on the process runtime.
   */
  const hibernate = (sandboxId: string, signal: AbortSignal) =>
    serialized(sandboxId, () =>
      guarded(signal, "INTERNAL", `Hibernating sandbox ${sandboxId} failed`, async () => {
        const { container, info, record } = await containers.live(sandboxId);
        if (!record?.harnessExecId) return; // never started, or hibernated already
        if (info.status === "frozen")
          throw new SwarmError("SANDBOX_FROZEN", `Sandbox ${sandboxId} is frozen: a paused agent is not hibernated.`);
        await killHarness(docker, container, record.harnessExecId);
        await rm(join(folders.controlDir(sandboxId), CONTROL_FILES.socket), { force: true });
        await folders.update({ ...record, harnessExecId: undefined, hibernatedAt: new Date().toISOString() });
      }),
    );

  const setPaused = (sandboxId: string, signal: AbortSignal, paused: boolean) =>
    guarded(
      signal,
      paused ? "SANDBOX_FREEZE_FAILED" : "SANDBOX_THAW_FAILED",
      `${paused ? "Freezing" : "Thawing"} sandbox ${sandboxId} failed`,
      () =>
        serialized(sandboxId, async () => {
          const { container, info } = await containers.live(sandboxId);
          // A hibernated sandbox has nothing to suspend: its wake waits for the agent's resume.
          if (info.status === "hibernated" || (info.status === "frozen") === paused) return;
          try {
            await (paused ? pauseContainer(container, signal) : container.unpause({ abortSignal: signal }));
          } catch (err) {
            // Another caller may have won the race; what matters is the state now.
            const now = await containers.find(sandboxId);
            if ((now?.info.status === "frozen") !== paused) throw err;
          }
        }),
    );

  /** What counts against a sandbox's disk limit: /work, or a fork child's own layer (never the fork point it shares). */
  const countedDirs = (sandboxId: string): string[] => {
    const layer = forks.ownLayer(sandboxId);
    return layer ? [layer] : [folders.workDir(sandboxId)];
  };

  // /work is a host folder: its quota is kept by the same watch as the process runtime's.
  startDiskWatch({
    intervalMs: options.diskWatchIntervalMs,
    log: options.log ?? ((message) => process.stderr.write(`swarmd: ${message}\n`)),
    list: async () =>
      (await folders.list()).flatMap((r) =>
        r.harnessExecId && !r.stoppedFor
          ? [
              {
                sandboxId: r.sandboxId,
                dirs: countedDirs(r.sandboxId),
                limitBytes: (r.diskMiB ?? DEFAULT_SANDBOX_LIMITS.diskMiB) * 1024 * 1024,
              },
            ]
          : [],
      ),
    stop: (sandboxId, reason) =>
      serialized(sandboxId, async () => {
        const record = await folders.read(sandboxId);
        if (!record) return;
        await folders.update({ ...record, stoppedFor: reason });
        const found = await containers.find(sandboxId);
        // The engine kills no paused container.
        if (found?.info.status === "frozen") await found.container.unpause().catch(() => undefined);
        await found?.container.kill().catch(() => undefined);
      }),
  });

  return {
    kind: "docker",
    // The agent's user (65532) owns neither the harness's process nor its control folder.
    harnessOutOfReach: true,
    provision,
    fork,
    writeInputs,
    startHarness,
    hibernate,
    connect: (sandboxId, signal) => connectSocket(join(folders.controlDir(sandboxId), CONTROL_FILES.socket), signal),
    freeze: (sandboxId, signal) => setPaused(sandboxId, signal, true),
    thaw: (sandboxId, signal) => setPaused(sandboxId, signal, false),
    close: (sandboxId, signal) =>
      guarded(signal, "INTERNAL", `Closing sandbox ${sandboxId} failed`, () => containers.remove(sandboxId)),
    inspect: (sandboxId, signal) =>
      guarded(signal, "INTERNAL", `Inspecting sandbox ${sandboxId} failed`, async () => {
        const found = await containers.find(sandboxId);
        if (found) return found.info;
        const record = SANDBOX_ID.test(sandboxId) ? await folders.read(sandboxId) : undefined;
        return (
          record && {
            sandboxId,
            runId: record.runId,
            agentId: record.agentId,
            status: "gone" as const,
            node: LOCAL_NODE_ID,
          }
        );
      }),
    list: (signal) => guarded(signal, "INTERNAL", "Listing sandboxes failed", () => containers.list()),
    // The one node is answered even when its engine is not: unreachable, with why (the port's contract).
    nodes: (signal) =>
      guarded(signal, "INTERNAL", "Listing the nodes failed", async () => [
        localNode(await containers.liveLimits()),
      ]).catch((err: unknown) => {
        if (signal.aborted || !isSwarmError(err, "RUNTIME_UNAVAILABLE")) throw err;
        return [{ ...localNode([]), engine: "unreachable" as const, reason: err.message }];
      }),
    snapshot: (sandboxId, baseId, runId, signal, copies) =>
      guarded(signal, "SNAPSHOT_FAILED", `Taking a fork point of sandbox ${sandboxId} failed`, () =>
        serialized(sandboxId, () =>
          whilePaused(sandboxId, () =>
            forks.snapshot(
              { work: folders.workDir(sandboxId), control: folders.controlDir(sandboxId) },
              baseId,
              runId,
              signal,
              copies,
            ),
          ),
        ),
      ),
    openTree: async (ref, signal) => {
      const sandboxId = "sandboxId" in ref && SANDBOX_ID.test(ref.sandboxId) ? ref.sandboxId : undefined;
      const live = sandboxId !== undefined && (await folders.read(sandboxId)) !== undefined;
      return forks.openTree(ref, live && sandboxId ? folders.workDir(sandboxId) : undefined, signal);
    },
    applyChanges: (sandboxId, changes, signal) =>
      guarded(signal, "INTERNAL", `Applying changes to sandbox ${sandboxId} failed`, () =>
        serialized(sandboxId, () =>
          whilePaused(sandboxId, async () => {
            const record = await folders.read(sandboxId);
            const limitBytes = (record?.diskMiB ?? DEFAULT_SANDBOX_LIMITS.diskMiB) * 1024 * 1024;
            const bytes = (await measuredBytes(countedDirs(sandboxId))) + bytesWritten(changes);
            if (bytes > limitBytes) throw overDiskLimit(sandboxId, bytes, limitBytes);
            await applyHostChanges(folders.workDir(sandboxId), changes, SANDBOX_USER, signal);
          }),
        ),
      ),
    dropRun: async (runId, signal) => {
      signal.throwIfAborted();
      await forks.dropRun(runId);
    },
    controlDir: (sandboxId) => folders.controlDir(sandboxId),
  };
}
