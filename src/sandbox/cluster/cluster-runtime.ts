import type { Duplex } from "node:stream";
import Docker from "dockerode";
import { type ErrorCode, errorMessage, SwarmError } from "../../errors.ts";
import { dropMemoryControl, memoryControl, openMemoryControl } from "../../harness/memory-control.ts";
import { relay } from "../../harness/mux/mux.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import { engineStatus } from "../docker/engine.ts";
import { LABEL, ownerIdOf, SANDBOX_ID } from "../docker/labels.ts";
import { pauseContainer } from "../docker/pause.ts";
import { assertInputNames } from "../input-names.ts";
import { createKeyedLock } from "../keyed-lock.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  type NodeInfo,
  type ProvisionRequest,
  type SandboxChange,
  type SandboxInfo,
  type SandboxRuntime,
} from "../runtime.ts";
import type { ControlAnswer, ControlRequest } from "../stream/sandbox-stream.ts";
import { applyArchiveChanges } from "./archive-apply.ts";
import { type ClusterEngines, openClusterEngines } from "./cluster-engines.ts";
import { ClusterForks } from "./cluster-forks.ts";
import type { ClusterSettings } from "./cluster-settings.ts";
import { ensureImageOn } from "./image-loader.ts";
import { healthAfter, healthChanges, type NodeLook, type SandboxHealth } from "./node-health.ts";
import { quick } from "./node-helpers.ts";
import { SandboxLinks } from "./sandbox-links.ts";
import { serviceNameOf, serviceSpec, type VolumeKind, volumeNameOf } from "./sandbox-service.ts";
import { currentTask, ENDED_STATES, type SandboxTask, waitRunning } from "./sandbox-tasks.ts";
import { copyAcrossNodes, copyOnNode } from "./work-copy.ts";

export interface ClusterRuntimeOptions {
  dataDir: string;
  settings: ClusterSettings;
  /** The cluster image (its content-hash tag) and the supervisor's command in it. */
  image: string;
  command: string[];
  /** The daemon's own engine, where `make sandbox-image` built the image. Default: DOCKER_HOST or the default socket. */
  local?: Docker;
  /** How often the nodes are looked at. Default 1 s. */
  watchIntervalMs?: number;
  log?: (message: string) => void;
}

const PROVISION_TIMEOUT_MS = 120_000;

/** `GET /_ping` with an abort (dockerode takes one; its types do not say so). */
function pingNode(docker: Docker): Promise<unknown> {
  const ping = docker.ping as unknown as (this: Docker, options: { abortSignal: AbortSignal }) => Promise<unknown>;
  return ping.call(docker, { abortSignal: AbortSignal.timeout(PING_TIMEOUT_MS) });
}

/** Whether `call` succeeds within `ms`; a call to a node cut off may hang far longer than its abort says. */
function answersWithin(call: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    call.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
const PING_TIMEOUT_MS = 1_500;
const VOLUMES: VolumeKind[] = ["work", "control", "inputs"];

/** The parts of a service's spec swarmd reads back: its labels, and the limits it was made with. */
interface ServiceSpec {
  Labels?: Record<string, string>;
  TaskTemplate?: {
    ContainerSpec?: { Ulimits?: Array<{ Name?: string; Hard?: number }> };
    Resources?: { Limits?: { NanoCPUs?: number; MemoryBytes?: number } };
  };
}

/** What swarmd knows of a sandbox it placed: its node, and what it last said of its health. */
interface Placed {
  runId: string;
  agentId: string;
  node: string;
  health: SandboxHealth;
  /** Why it was lost, once it was. */
  lostFor?: string;
  limits: { cpus: number; memoryMiB: number };
}

/**
 * The `cluster` runtime: each sandbox is a one-task Docker Swarm service, placed by the swarm.
 * What the swarm API does not offer (attach, pause, archives) goes to the engine of the node
 * running the task. Nothing is shared with a sandbox but its one stream (sandbox-links.ts): the
 * harness protocol, model calls and inputs travel over the container's stdio. docs/cluster.md.
 */
export function createClusterRuntime(options: ClusterRuntimeOptions): SandboxRuntime & { stop(): void } {
  const { settings, image } = options;
  const log = options.log ?? ((message: string) => process.stderr.write(`swarmd: ${message}\n`));
  const owner = ownerIdOf(options.dataDir);
  const engines: ClusterEngines = openClusterEngines(settings);
  const { manager } = engines;
  const local = options.local ?? new Docker();
  const serialized = createKeyedLock();
  const placed = new Map<string, Placed>();
  const looks = new Map<string, NodeLook>();
  /** Nodes that cannot take sandboxes, and why (no engine address, the image cannot be loaded, still loading). */
  const unusable = new Map<string, string>();
  const imageChecks = new Map<string, Promise<void>>();
  const listeners = new Set<(change: SandboxChange) => void>();
  /** Callers waiting for an unreachable sandbox's node to answer, or for the sandbox to be lost. */
  const waiters = new Map<string, Set<() => void>>();
  /** Engine calls for a sandbox whose node does not answer fail at once instead of waiting for TCP to give up. */
  const requireReachable = (sandboxId: string, what: ErrorCode) => {
    const entry = placed.get(sandboxId);
    if (entry?.health === "unreachable")
      throw new SwarmError(what, `Sandbox ${sandboxId}'s node ${entry.node} does not answer swarmd now.`);
    if (entry?.health === "lost")
      throw new SwarmError("SANDBOX_GONE", `Sandbox ${sandboxId} is gone: ${entry.lostFor}.`);
  };
  const whenReachable = (sandboxId: string, signal: AbortSignal): Promise<void> => {
    const settled = () => {
      const entry = placed.get(sandboxId);
      if (entry?.health === "lost") throw new SwarmError("SANDBOX_GONE", entry.lostFor ?? "its node is gone");
      return entry?.health !== "unreachable";
    };
    if (settled()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        signal.removeEventListener("abort", onAbort);
        try {
          settled();
          resolve();
        } catch (err) {
          reject(err);
        }
      };
      const onAbort = () => {
        waiters.get(sandboxId)?.delete(done);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const set = waiters.get(sandboxId) ?? new Set<() => void>();
      waiters.set(sandboxId, set);
      set.add(done);
    });
  };
  const controlDir = (sandboxId: string) => `/swarmd-cluster/${owner}/${sandboxId}/control`;

  const links = new SandboxLinks({
    locate: async (sandboxId) => {
      const task = await liveTask(sandboxId);
      return { docker: engines.node(task.nodeId!), containerId: task.containerId! };
    },
    model: (sandboxId, channel) => {
      const memory = memoryControl(controlDir(sandboxId));
      try {
        if (!memory) throw new Error("no gateway");
        relay(channel, memory.dial(CONTROL_FILES.modelSocket));
      } catch {
        channel.destroy();
      }
    },
    log,
  });

  const guarded = async <T>(signal: AbortSignal, code: ErrorCode, what: string, work: () => Promise<T>): Promise<T> => {
    signal.throwIfAborted();
    try {
      return await work();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (err instanceof SwarmError || (err as { name?: string }).name === "AbortError") throw err;
      throw new SwarmError(code, `${what}: ${errorMessage(err).trim()}`, { cause: err });
    }
  };

  const serviceName = (sandboxId: string) => serviceNameOf(owner, sandboxId);
  const forks = new ClusterForks({
    dataDir: options.dataDir,
    owner,
    image,
    engines,
    nodeIds: () => Object.keys(settings.nodes),
    log,
  });

  /** Our service for the sandbox: its spec, or undefined when there is none (or it is another data folder's). */
  const findService = async (sandboxId: string): Promise<ServiceSpec | undefined> => {
    if (!SANDBOX_ID.test(sandboxId)) return undefined;
    try {
      const info = await manager.getService(serviceName(sandboxId)).inspect({ abortSignal: quick() });
      const spec = info.Spec as ServiceSpec | undefined;
      return spec?.Labels?.[LABEL.owner] === owner ? spec : undefined;
    } catch (err) {
      if (engineStatus(err) === 404) return undefined;
      throw err;
    }
  };

  /** The running task of a sandbox: `SANDBOX_NOT_FOUND` when unknown, `SANDBOX_GONE` when its task ended. */
  const liveTask = async (sandboxId: string): Promise<SandboxTask> => {
    if (!(await findService(sandboxId))) throw new SwarmError("SANDBOX_NOT_FOUND", `No sandbox ${sandboxId}.`);
    const task = await currentTask(manager, serviceName(sandboxId));
    if (task?.state !== "running" || !task.nodeId || !task.containerId)
      throw new SwarmError(
        "SANDBOX_GONE",
        `Sandbox ${sandboxId}'s task is ${task?.state ?? "gone"}${task?.error ? ` (${task.error})` : ""}.`,
      );
    return task;
  };

  const request = async (sandboxId: string, op: ControlRequest, signal: AbortSignal): Promise<ControlAnswer> => {
    const stream = await links.stream(sandboxId, signal);
    return stream.request(op, signal);
  };

  const containerOf = (task: SandboxTask) => engines.node(task.nodeId!).getContainer(task.containerId!);

  /**
   * Remove the service, wait for its container to go, then remove its volumes on its node but a
   * kept `/work` (`keepWork`: a fork child's, to be compared and adopted until its run is dropped).
   */
  const removeSandbox = async (sandboxId: string, keepWork = false): Promise<void> => {
    links.close(sandboxId);
    const task = await currentTask(manager, serviceName(sandboxId)).catch(() => undefined);
    try {
      await manager.getService(serviceName(sandboxId)).remove({ abortSignal: quick() } as object);
    } catch (err) {
      if (engineStatus(err) !== 404) throw err;
    }
    placed.delete(sandboxId);
    dropMemoryControl(controlDir(sandboxId));
    if (!task?.nodeId || !engines.knows(task.nodeId)) return;
    const node = engines.node(task.nodeId);
    const deadline = Date.now() + 30_000;
    if (keepWork) forks.kept(sandboxId, task.nodeId);
    for (const kind of VOLUMES) {
      if (kind === "work" && keepWork) continue;
      for (;;) {
        try {
          await node.getVolume(volumeNameOf(owner, sandboxId, kind)).remove({ abortSignal: quick() } as object);
          break;
        } catch (err) {
          const status = engineStatus(err);
          if (status === 404) break;
          // 409: its container is still being removed.
          if (status !== 409 || Date.now() > deadline) {
            log(
              `sandbox ${sandboxId}: its ${kind} volume on node ${task.nodeId} was not removed: ${errorMessage(err)}`,
            );
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }
  };

  /** Create the service and wait for its task; `local`: on that node if the swarm can place it there in time. */
  const place = async (req: ProvisionRequest, signal: AbortSignal, localTo?: string): Promise<SandboxTask> => {
    if (req.network === true && settings.network === undefined)
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        "The cluster runtime gives a sandbox a network only through SWARM_CLUSTER_NETWORK, which is not set.",
      );
    const excluded = [...unusable.keys()].map((id) => `node.id!=${id}`);
    const create = (constraints: string[]) =>
      manager.createService(
        serviceSpec({
          owner,
          req,
          image,
          command: options.command,
          constraints,
          reserve: settings.reserve,
          network: settings.network,
        }),
      );
    const name = serviceName(req.sandboxId);
    if (localTo !== undefined && !unusable.has(localTo)) {
      await create([`node.id==${localTo}`, ...excluded]);
      const task = await waitRunning(manager, name, {
        timeoutMs: PROVISION_TIMEOUT_MS,
        placedWithinMs: settings.localWaitMs,
        signal,
      });
      if (task) return task;
      log(
        `sandbox ${req.sandboxId}: its parent's node ${localTo} could not take it within ${settings.localWaitMs} ms; placing it anywhere`,
      );
      await removeSandbox(req.sandboxId);
      openMemoryControl(controlDir(req.sandboxId));
    }
    await create(excluded);
    return (await waitRunning(manager, name, { timeoutMs: PROVISION_TIMEOUT_MS, signal }))!;
  };

  /** Place the sandbox, fill it, say hello to its supervisor; anything that fails removes what was made. */
  const create = async (
    req: ProvisionRequest,
    signal: AbortSignal,
    fill?: (task: SandboxTask) => Promise<void>,
    localTo?: string,
  ): Promise<SandboxInfo> => {
    if (!SANDBOX_ID.test(req.sandboxId))
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `Not a usable sandbox id: ${JSON.stringify(req.sandboxId)}.`);
    if (await findService(req.sandboxId))
      throw new SwarmError("SANDBOX_EXISTS", `Sandbox ${req.sandboxId} already exists.`);
    openMemoryControl(controlDir(req.sandboxId));
    try {
      const task = await place(req, signal, localTo);
      const limits = req.limits ?? DEFAULT_SANDBOX_LIMITS;
      placed.set(req.sandboxId, {
        runId: req.runId,
        agentId: req.agentId,
        node: task.nodeId!,
        health: "fine",
        limits: { cpus: limits.cpus, memoryMiB: limits.memoryMiB },
      });
      await fill?.(task);
      await request(req.sandboxId, { op: "init", spec: req.spec, env: req.env ?? {} }, signal);
      return { sandboxId: req.sandboxId, runId: req.runId, agentId: req.agentId, status: "running", node: task.nodeId };
    } catch (err) {
      await removeSandbox(req.sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const provision = (req: ProvisionRequest, signal: AbortSignal) =>
    guarded(signal, "SANDBOX_PROVISION_FAILED", `Provisioning sandbox ${req.sandboxId} failed`, () =>
      create(req, signal),
    );

  /**
   * A fork from the parent as it is now: the child is placed on its parent's node when the swarm
   * can, and gets a copy of /work taken while the parent is paused. A fork child (`req.fork`)
   * starts from its fork point instead, placed on the fork point's node when the swarm can.
   */
  const fork = (parentSandboxId: string, req: ProvisionRequest, signal: AbortSignal) =>
    guarded(
      signal,
      "SANDBOX_PROVISION_FAILED",
      `Forking sandbox ${parentSandboxId} into ${req.sandboxId} failed`,
      async () => {
        const started = Date.now();
        const childWork = volumeNameOf(owner, req.sandboxId, "work");
        const copying = { image, labels: { [LABEL.owner]: owner, [LABEL.run]: req.runId }, log, signal };
        const source = req.fork;
        if (source) {
          const baseNode = await forks.nodeOf(source.baseId);
          const info = await create(
            req,
            signal,
            (child) =>
              forks.fillChild(
                source,
                { node: child.nodeId!, container: containerOf(child), workVolume: childWork, runId: req.runId },
                signal,
              ),
            baseNode,
          );
          log(
            `sandbox ${req.sandboxId} forked from fork point ${source.baseId} ${info.node === baseNode ? "on its node" : `from node ${baseNode} to ${info.node}`} in ${Date.now() - started} ms`,
          );
          return info;
        }
        const parent = await usableTask(parentSandboxId, signal);
        const info = await create(
          req,
          signal,
          async (child) => {
            await serialized(parentSandboxId, () =>
              whilePaused(parent, async () => {
                if (child.nodeId === parent.nodeId)
                  await copyOnNode(
                    engines.node(parent.nodeId!),
                    { from: volumeNameOf(owner, parentSandboxId, "work"), to: childWork },
                    copying,
                  );
                else
                  await copyAcrossNodes(
                    { docker: engines.node(parent.nodeId!), container: containerOf(parent) },
                    { docker: engines.node(child.nodeId!), volume: childWork },
                    copying,
                  );
              }),
            );
          },
          parent.nodeId,
        );
        log(
          `sandbox ${req.sandboxId} forked from ${parentSandboxId} ${info.node === parent.nodeId ? "on its node" : `from node ${parent.nodeId} to ${info.node}`} in ${Date.now() - started} ms`,
        );
        return info;
      },
    );

  /** Run `work` with the sandbox's container paused, leaving it as it was (every engine call bounded). */
  const whilePaused = async <T>(task: SandboxTask, work: () => Promise<T>): Promise<T> => {
    const container = containerOf(task);
    const { State } = await container.inspect({ abortSignal: quick() });
    if (State.Paused) return work();
    await pauseContainer(container, quick());
    try {
      return await work();
    } finally {
      await container.unpause({ abortSignal: quick() });
    }
  };

  const setPaused = (sandboxId: string, signal: AbortSignal, paused: boolean) =>
    guarded(
      signal,
      paused ? "SANDBOX_FREEZE_FAILED" : "SANDBOX_THAW_FAILED",
      `${paused ? "Freezing" : "Thawing"} sandbox ${sandboxId} failed`,
      () =>
        serialized(sandboxId, async () => {
          requireReachable(sandboxId, paused ? "SANDBOX_FREEZE_FAILED" : "SANDBOX_THAW_FAILED");
          const container = containerOf(await usableTask(sandboxId, signal));
          const { State } = await container.inspect({ abortSignal: quick() });
          if (State.Paused === paused) return;
          if (!paused || !(await hibernated(sandboxId, signal)))
            await (paused ? pauseContainer(container, signal) : container.unpause({ abortSignal: signal }));
        }),
    );

  type Status = { hibernated?: boolean; harness?: string; ended?: boolean };
  const supervisorStatus = async (sandboxId: string, signal: AbortSignal): Promise<Status> =>
    (await request(sandboxId, { op: "status" }, signal)) as Status;
  const hibernated = async (sandboxId: string, signal: AbortSignal): Promise<boolean> => {
    const answer = await supervisorStatus(sandboxId, signal);
    return answer.harness !== "running" && answer.hibernated === true;
  };
  /** The live task of a sandbox whose harness has not ended on its own: `SANDBOX_GONE` otherwise. */
  const usableTask = async (sandboxId: string, signal: AbortSignal): Promise<SandboxTask> => {
    const task = await liveTask(sandboxId);
    const { State } = await containerOf(task).inspect({ abortSignal: quick() });
    if (!State.Paused && (await supervisorStatus(sandboxId, signal)).ended)
      throw new SwarmError("SANDBOX_GONE", `Sandbox ${sandboxId}'s harness ended.`);
    return task;
  };

  const statusOf = async (sandboxId: string, task: SandboxTask | undefined, signal: AbortSignal) => {
    if (!task || ENDED_STATES.has(task.state) || !task.nodeId || !task.containerId)
      return { status: "gone" as const, reason: task?.error ?? task?.message };
    if (task.state !== "running") return { status: "running" as const };
    // Its node does not answer, but the swarm still has it: it runs as far as anyone can tell.
    if (placed.get(sandboxId)?.health === "unreachable") return { status: "running" as const };
    try {
      const { State } = await containerOf(task).inspect({ abortSignal: signal });
      if (State.Paused) return { status: "frozen" as const };
      if (!State.Running) return { status: "gone" as const, reason: `its container ${State.Status}` };
      const answer = await supervisorStatus(sandboxId, signal).catch(async (err: unknown) => {
        if (signal.aborted) throw err;
        // Closed while it was looked at: gone. Its supervisor silent: as far as anyone can tell, it runs.
        return (await findService(sandboxId)) ? ({} as Status) : ({ ended: true } as Status);
      });
      if (answer.ended) return { status: "gone" as const, reason: "its harness ended" };
      return {
        status: answer.hibernated && answer.harness !== "running" ? ("hibernated" as const) : ("running" as const),
      };
    } catch (err) {
      if (engineStatus(err) === 404) return { status: "gone" as const, reason: "its container vanished" };
      throw err;
    }
  };

  const describe = async (spec: ServiceSpec | undefined, signal: AbortSignal): Promise<SandboxInfo> => {
    const labels = spec?.Labels ?? {};
    const sandboxId = labels[LABEL.sandbox] ?? "";
    openMemoryControl(controlDir(sandboxId));
    const task = await currentTask(manager, serviceName(sandboxId));
    const { status, reason } = await statusOf(sandboxId, task, signal);
    if (task?.nodeId && status !== "gone" && !placed.has(sandboxId))
      placed.set(sandboxId, {
        runId: labels[LABEL.run] ?? "",
        agentId: labels[LABEL.agent] ?? "",
        node: task.nodeId,
        health: "fine",
        // Found again after a restart: what it reserves is in its service.
        limits: {
          cpus: (spec?.TaskTemplate?.Resources?.Limits?.NanoCPUs ?? 0) / 1e9,
          memoryMiB: (spec?.TaskTemplate?.Resources?.Limits?.MemoryBytes ?? 0) / 1024 / 1024,
        },
      });
    return {
      sandboxId,
      runId: labels[LABEL.run] ?? "",
      agentId: labels[LABEL.agent] ?? "",
      status,
      ...(reason ? { reason } : {}),
      ...(task?.nodeId ? { node: task.nodeId } : {}),
    };
  };

  // The nodes: looked at every second (their state, availability, engine), the image loaded where
  // it is missing, and the changes to the health of the sandboxes on them told to the watchers.
  const lookAtNodes = async () => {
    const nodes = await manager.listNodes({ abortSignal: quick() } as Docker.NodeListOptions);
    await Promise.all(
      nodes.map(async (n) => {
        const id = String(n.ID);
        const look: NodeLook = {
          id,
          hostname: n.Description?.Hostname ?? id,
          state: n.Status?.State ?? "unknown",
          availability: (n.Spec?.Availability ?? "active") as NodeLook["availability"],
          reachable: false,
        };
        if (!engines.knows(id)) {
          unusable.set(id, `no engine address for it in SWARM_CLUSTER_NODES`);
        } else {
          look.reachable = await answersWithin(pingNode(engines.node(id)), PING_TIMEOUT_MS);
          if (look.reachable && !imageChecks.has(id) && look.state === "ready") {
            unusable.set(id, "loading the sandbox image");
            const check = ensureImageOn(
              image,
              local,
              { docker: engines.node(id), name: `${look.hostname} (${id})` },
              log,
            )
              .then((reason) => {
                if (reason) unusable.set(id, reason);
                else unusable.delete(id);
                if (reason) {
                  log(`node ${look.hostname} (${id}) cannot take sandboxes: ${reason}`);
                  imageChecks.delete(id); // tried again at a later look
                }
              })
              .catch((err: unknown) => {
                unusable.set(id, errorMessage(err));
                imageChecks.delete(id);
              });
            imageChecks.set(id, check);
          }
        }
        looks.set(id, look);
      }),
    );
    for (const id of [...looks.keys()]) if (!nodes.some((n) => n.ID === id)) looks.delete(id);
    for (const change of healthChanges(placed, looks)) {
      const entry = placed.get(change.sandboxId);
      if (entry) {
        entry.health = healthAfter(change);
        if (change.type === "lost") entry.lostFor = change.reason;
      }
      if (change.type !== "unreachable") {
        for (const waiter of waiters.get(change.sandboxId) ?? []) waiter();
        waiters.delete(change.sandboxId);
      }
      if (change.type === "lost") links.close(change.sandboxId);
      for (const listener of listeners) listener(change);
    }
  };

  let looking: Promise<void> | undefined;
  const look = () => {
    looking ??= lookAtNodes()
      .catch((err: unknown) => log(`the swarm manager did not answer: ${errorMessage(err)}`))
      .finally(() => {
        looking = undefined;
      });
    return looking;
  };
  const watchTimer = setInterval(() => void look(), options.watchIntervalMs ?? 1_000);
  watchTimer.unref();

  /** Every node with its image ready, before the first sandbox is placed. */
  const ready = look().then(() => Promise.all(imageChecks.values()));

  const nodes = async (signal: AbortSignal): Promise<NodeInfo[]> => {
    await look();
    signal.throwIfAborted();
    const nodeList = await manager.listNodes();
    return nodeList.map((n) => {
      const id = String(n.ID);
      const mine = [...placed.values()].filter((p) => p.node === id && p.health !== "lost");
      const lookNow = looks.get(id);
      const reason = unusable.get(id) ?? (lookNow && !lookNow.reachable ? "its engine does not answer" : undefined);
      return {
        id,
        hostname: n.Description?.Hostname ?? id,
        state: (n.Status?.State ?? "unknown") as NodeInfo["state"],
        availability: (n.Spec?.Availability ?? "active") as NodeInfo["availability"],
        sandboxes: mine.length,
        cpus: (n.Description?.Resources?.NanoCPUs ?? 0) / 1e9,
        memoryMiB: Math.round((n.Description?.Resources?.MemoryBytes ?? 0) / 1024 / 1024),
        reservedCpus: Number(mine.reduce((sum, p) => sum + p.limits.cpus * settings.reserve, 0).toFixed(3)),
        reservedMemoryMiB: Math.round(mine.reduce((sum, p) => sum + p.limits.memoryMiB * settings.reserve, 0)),
        engine: lookNow?.reachable ? "reachable" : "unreachable",
        ...(reason ? { reason } : {}),
      };
    });
  };

  return {
    kind: "cluster",
    // The agent's tools run as 65532 in a container whose harness is 65533's and shares no folder.
    harnessOutOfReach: true,
    ...(settings.network === undefined
      ? {
          networkRefusal:
            "the cluster runtime gives sandboxes a network only through an operator-made swarm network (SWARM_CLUSTER_NETWORK), which is not set",
        }
      : {}),
    provision: async (req, signal) => {
      await ready;
      return provision(req, signal);
    },
    fork: async (parentSandboxId, req, signal) => {
      await ready;
      return fork(parentSandboxId, req, signal);
    },
    writeInputs: async (sandboxId, files, signal) => {
      assertInputNames(Object.keys(files));
      await guarded(signal, "INTERNAL", `Writing inputs into sandbox ${sandboxId} failed`, async () => {
        await usableTask(sandboxId, signal);
        await request(sandboxId, { op: "inputs", files }, signal);
      });
    },
    startHarness: (sandboxId, signal) =>
      serialized(sandboxId, () =>
        guarded(signal, "HARNESS_START_FAILED", `Starting the harness of sandbox ${sandboxId} failed`, async () => {
          const container = containerOf(await usableTask(sandboxId, signal));
          if ((await container.inspect({ abortSignal: quick() })).State.Paused)
            throw new SwarmError(
              "HARNESS_START_FAILED",
              `Sandbox ${sandboxId} is frozen: thaw it before starting its harness.`,
            );
          const model = memoryControl(controlDir(sandboxId))?.files.get(CONTROL_FILES.model);
          if (model !== undefined) await request(sandboxId, { op: "init", model }, signal);
          const answer = await request(sandboxId, { op: "start" }, signal);
          if (answer.ok === false) throw new SwarmError("HARNESS_START_FAILED", String(answer.error));
        }),
      ),
    hibernate: (sandboxId, signal) =>
      serialized(sandboxId, () =>
        guarded(signal, "INTERNAL", `Hibernating sandbox ${sandboxId} failed`, async () => {
          const container = containerOf(await usableTask(sandboxId, signal));
          if ((await container.inspect({ abortSignal: quick() })).State.Paused)
            throw new SwarmError("SANDBOX_FROZEN", `Sandbox ${sandboxId} is frozen: a paused agent is not hibernated.`);
          await request(sandboxId, { op: "hibernate" }, signal);
        }),
      ),
    connect: async (sandboxId, signal): Promise<Duplex> => {
      try {
        const stream = await links.stream(sandboxId, signal);
        const answer = (await stream.request({ op: "status" }, signal)) as { harness?: string };
        if (answer.harness !== "running")
          throw new SwarmError("HARNESS_UNREACHABLE", `Sandbox ${sandboxId}'s harness is not running.`);
        return stream.openHarness();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof SwarmError && err.code === "HARNESS_UNREACHABLE") throw err;
        throw new SwarmError(
          "HARNESS_UNREACHABLE",
          `Sandbox ${sandboxId}'s harness cannot be reached: ${errorMessage(err)}`,
          {
            cause: err,
          },
        );
      }
    },
    freeze: (sandboxId, signal) => setPaused(sandboxId, signal, true),
    thaw: (sandboxId, signal) => setPaused(sandboxId, signal, false),
    close: (sandboxId, signal) =>
      guarded(signal, "INTERNAL", `Closing sandbox ${sandboxId} failed`, () =>
        serialized(sandboxId, async () =>
          removeSandbox(sandboxId, await forks.keepsWork((await findService(sandboxId))?.Labels)),
        ),
      ),
    inspect: (sandboxId, signal) =>
      guarded(signal, "INTERNAL", `Inspecting sandbox ${sandboxId} failed`, async () => {
        const spec = await findService(sandboxId);
        return spec && describe(spec, signal);
      }),
    list: (signal) =>
      guarded(signal, "INTERNAL", "Listing sandboxes failed", async () => {
        const services = await manager.listServices({ filters: { label: [`${LABEL.owner}=${owner}`] } });
        return Promise.all(services.map((s) => describe(s.Spec as ServiceSpec | undefined, signal)));
      }),
    nodes,
    reachable: (sandboxId) => {
      const entry = placed.get(sandboxId);
      return entry && entry.health === "fine";
    },
    whenReachable,
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    snapshot: (sandboxId, baseId, runId, signal) =>
      guarded(signal, "SNAPSHOT_FAILED", `Taking a fork point of sandbox ${sandboxId} failed`, async () => {
        if (await forks.has(baseId)) return;
        await serialized(sandboxId, async () => {
          requireReachable(sandboxId, "SNAPSHOT_FAILED");
          const task = await usableTask(sandboxId, signal);
          const from = {
            node: task.nodeId!,
            container: containerOf(task),
            workVolume: volumeNameOf(owner, sandboxId, "work"),
          };
          await whilePaused(task, () => forks.snapshot(from, baseId, runId, signal));
        });
      }),
    openTree: (ref, signal) =>
      guarded(signal, "INTERNAL", `Opening the /work of ${JSON.stringify(ref)} failed`, () =>
        forks.openTree(
          ref,
          async (sandboxId) => {
            const spec = await findService(sandboxId);
            const task = spec && (await currentTask(manager, serviceName(sandboxId)));
            return task?.nodeId ? { node: task.nodeId, runId: spec?.Labels?.[LABEL.run] ?? "" } : undefined;
          },
          signal,
        ),
      ),
    applyChanges: (sandboxId, changes, signal) =>
      guarded(signal, "INTERNAL", `Applying changes to sandbox ${sandboxId} failed`, () =>
        serialized(sandboxId, async () => {
          requireReachable(sandboxId, "INTERNAL");
          const spec = await findService(sandboxId);
          const task = await usableTask(sandboxId, signal);
          // The disk limit is each file's (RLIMIT_FSIZE): the cluster does not bound the sum of /work (docs/cluster.md).
          const fsize = spec?.TaskTemplate?.ContainerSpec?.Ulimits?.find((u) => u.Name === "fsize")?.Hard;
          const target = {
            docker: engines.node(task.nodeId!),
            volume: volumeNameOf(owner, sandboxId, "work"),
            image,
            labels: { [LABEL.owner]: owner, [LABEL.run]: spec?.Labels?.[LABEL.run] ?? "" },
            sandboxId,
            limitBytes: fsize ?? DEFAULT_SANDBOX_LIMITS.diskMiB * 1024 * 1024,
            log,
          };
          await whilePaused(task, () => applyArchiveChanges(target, changes, signal));
        }),
      ),
    dropRun: async (runId, signal) => {
      signal.throwIfAborted();
      await forks.dropRun(runId, signal);
    },
    controlDir: (sandboxId) => controlDir(sandboxId),
    stop() {
      clearInterval(watchTimer);
      links.closeAll();
    },
  };
}
