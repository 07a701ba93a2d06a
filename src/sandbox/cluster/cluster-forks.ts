import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { z } from "zod";
import { errorMessage, isSwarmError, SwarmError } from "../../errors.ts";
import type { ForkNote } from "../../harness/fork-session.ts";
import { engineStatus } from "../docker/engine.ts";
import { LABEL, SANDBOX_ID } from "../docker/labels.ts";
import type { ForkSource } from "../runtime.ts";
import type { TreeRef, WorkTree } from "../work-tree.ts";
import { archiveTree } from "./archive-tree.ts";
import type { ClusterEngines } from "./cluster-engines.ts";
import { putForkFiles, readNewestSession } from "./fork-files.ts";
import { createHelper, HELPER_LABEL, quick, removeHelper, withHelper } from "./node-helpers.ts";
import { FORK_BASE_LABEL, VOLUME_TARGETS, volumeNameOf } from "./sandbox-service.ts";
import { copyAcrossNodes, copyOnNode } from "./work-copy.ts";

/** A fork point's record in the daemon's data folder, written last: a folder without it is half made. */
const BaseRecord = z.object({ v: z.literal(1), runId: z.string(), node: z.string(), session: z.boolean() });
type BaseRecord = z.infer<typeof BaseRecord>;

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const VOLUME_KIND = "swarmd.volume";

/** Where a sandbox is, for a fork: its node, its container there, and its `-work` volume. */
export interface ForkPlace {
  node: string;
  container: Docker.Container;
  workVolume: string;
}

/** Where a live sandbox's /work is (its node), and its run; undefined when it has no service. */
export type LiveLookup = (sandboxId: string) => Promise<{ node: string; runId: string } | undefined>;

export interface ClusterForksDeps {
  dataDir: string;
  owner: string;
  image: string;
  engines: ClusterEngines;
  /** Every node id swarmd has an engine for (SWARM_CLUSTER_NODES). */
  nodeIds: () => string[];
  log: (message: string) => void;
}

/**
 * Forks on the cluster, where a sandbox's files live in volumes on its node and nothing is shared
 * with the daemon:
 *
 * - A fork point (`snapshot`) is a volume `swarmd-<owner>-base-<baseId>` on the forked sandbox's
 *   node, a copy of its `-work` volume made there by a helper while it is paused, and its
 *   conversation (pi's newest session file, read from its container's archive) kept on the
 *   daemon's side, `<dataDir>/forks/bases/<baseId>/`, with a record naming the node.
 * - A fork child (`fillChild`) gets a copy of that volume: by a helper on the node when the swarm
 *   placed it there, else streamed from a helper there into one on its node. Its fork files go
 *   into its control folder before its harness starts. Its `-work` volume carries the fork point's
 *   id, and is kept when the child closes (`keepsWork`), until the run is dropped.
 * - Trees (`openTree`) are read through a helper container that mounts the volume and is never
 *   started (archive-tree.ts); the helper goes with the tree's `close`.
 * - `dropRun` removes the run's fork point volumes, kept volumes and helpers on every node, and
 *   its records.
 */
export class ClusterForks {
  readonly #bases: string;
  /** Where the kept /work of a closed fork child is, once known. */
  readonly #kept = new Map<string, string>();

  constructor(private readonly deps: ClusterForksDeps) {
    this.#bases = join(deps.dataDir, "forks", "bases");
  }

  /** A fork point of the sandbox at `from`, paused by the caller. Idempotent; a half-made one is made again. */
  async snapshot(from: ForkPlace, baseId: string, runId: string, signal: AbortSignal): Promise<void> {
    const dir = this.#baseDir(baseId, "SNAPSHOT_FAILED");
    if (await readRecord(dir)) return;
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const docker = this.deps.engines.node(from.node);
    const volume = this.baseVolume(baseId);
    try {
      await removeVolume(docker, volume);
      await docker.createVolume({
        Name: volume,
        Labels: {
          [LABEL.owner]: this.deps.owner,
          [LABEL.run]: runId,
          [FORK_BASE_LABEL]: baseId,
          [VOLUME_KIND]: "base",
        },
        abortSignal: quick(),
      } as Docker.VolumeCreateOptions);
      // The files and the conversation at once: the sandbox is paused for the longer of the two.
      const [copied, session] = await Promise.allSettled([
        copyOnNode(docker, { from: from.workVolume, to: volume }, this.#copyOptions(runId, signal)),
        readNewestSession(from.container, signal),
      ]);
      if (copied.status === "rejected") throw copied.reason;
      if (session.status === "rejected") throw session.reason;
      if (session.value) await writeFile(join(dir, "session.jsonl"), session.value, { mode: 0o600 });
      const record: BaseRecord = { v: 1, runId, node: from.node, session: session.value !== undefined };
      await writeFile(join(dir, "base.json"), JSON.stringify(record), { mode: 0o600 });
    } catch (err) {
      await removeVolume(docker, volume).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      if (signal.aborted) throw signal.reason;
      if (isSwarmError(err, "SNAPSHOT_FAILED")) throw err;
      throw new SwarmError("SNAPSHOT_FAILED", `fork point ${baseId}: ${errorMessage(err)}`, { cause: err });
    }
  }

  /** Whether the fork point was made (and not dropped). */
  async has(baseId: string): Promise<boolean> {
    return ID.test(baseId) && (await readRecord(join(this.#bases, baseId))) !== undefined;
  }

  /** The node a fork point's volume is on; `SANDBOX_PROVISION_FAILED` when there is no such fork point. */
  async nodeOf(baseId: string): Promise<string> {
    return (await this.#base(baseId, "SANDBOX_PROVISION_FAILED")).node;
  }

  /** A fork child's /work from its fork point, and its fork files, before its harness starts. */
  async fillChild(fork: ForkSource, child: ForkPlace & { runId: string }, signal: AbortSignal): Promise<void> {
    const base = await this.#base(fork.baseId, "SANDBOX_PROVISION_FAILED");
    const from = this.deps.engines.node(base.node);
    const volume = this.baseVolume(fork.baseId);
    // A bind of a volume that is not there makes an empty one: the child would start with nothing.
    if (!(await volumeExists(from, volume)))
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `fork point ${fork.baseId}'s files are gone from node ${base.node}`,
      );
    const options = this.#copyOptions(child.runId, signal);
    if (child.node === base.node) await copyOnNode(from, { from: volume, to: child.workVolume }, options);
    else
      await withHelper(
        from,
        {
          image: this.deps.image,
          binds: [`${volume}:${VOLUME_TARGETS.work}:ro,nocopy`],
          labels: { ...options.labels, [HELPER_LABEL]: "copy" },
        },
        this.deps.log,
        (source) =>
          copyAcrossNodes(
            { docker: from, container: source },
            { docker: this.deps.engines.node(child.node), volume: child.workVolume },
            options,
          ),
      );
    const note: ForkNote = {
      copy: fork.copy,
      of: fork.of,
      ...(fork.toolCallId !== undefined ? { toolCallId: fork.toolCallId } : {}),
    };
    const session = base.session
      ? join(this.#baseDir(fork.baseId, "SANDBOX_PROVISION_FAILED"), "session.jsonl")
      : undefined;
    await putForkFiles(child.container, note, session, signal);
  }

  /** Whether a closing sandbox's `-work` volume stays: a fork child's, while its fork point does. */
  async keepsWork(labels: Record<string, string> | undefined): Promise<boolean> {
    const baseId = labels?.[FORK_BASE_LABEL];
    return baseId !== undefined && ID.test(baseId) && (await readRecord(join(this.#bases, baseId))) !== undefined;
  }

  /** A fork child's /work was kept on `node` when it closed. */
  kept(sandboxId: string, node: string): void {
    this.#kept.set(sandboxId, node);
  }

  /**
   * A tree: a fork point's volume, a live sandbox's `-work` volume (`live` says where), or a
   * closed fork child's kept one, each read through a helper on its node. `SANDBOX_NOT_FOUND` when
   * there is none; a node that does not answer while the tree is looked for fails the call.
   */
  async openTree(ref: TreeRef, live: LiveLookup, signal: AbortSignal): Promise<WorkTree> {
    signal.throwIfAborted();
    if ("baseId" in ref) {
      const base = await this.#base(ref.baseId, "SANDBOX_NOT_FOUND");
      return this.#tree(base.node, this.baseVolume(ref.baseId), base.runId, true);
    }
    const { sandboxId } = ref;
    if (!SANDBOX_ID.test(sandboxId)) throw new SwarmError("SANDBOX_NOT_FOUND", `no sandbox ${sandboxId}`);
    const volume = volumeNameOf(this.deps.owner, sandboxId, "work");
    const running = await live(sandboxId);
    if (running) return this.#tree(running.node, volume, running.runId, false);
    const kept = await this.#findKept(sandboxId, volume);
    if (!kept) throw new SwarmError("SANDBOX_NOT_FOUND", `no sandbox ${sandboxId} and no fork child's changes of it`);
    return this.#tree(kept.node, volume, kept.runId, true);
  }

  /**
   * Remove the run's fork points (volumes and records), the kept /work of its closed fork children
   * and any helper of it left behind, on every node. A fork child still live keeps its volume (its
   * close removes it, its fork point gone). Throws, after doing the rest, when a node did not
   * answer: what is left there is removed by a later drop.
   */
  async dropRun(runId: string, signal: AbortSignal): Promise<void> {
    const { owner, engines, log } = this.deps;
    // The records first: a fork child closing meanwhile then finds its fork point gone and removes its /work.
    for (const id of await readdir(this.#bases).catch(() => [] as string[])) {
      const dir = join(this.#bases, id);
      const record = await readRecord(dir);
      if (record ? record.runId === runId : await isOld(dir)) await rm(dir, { recursive: true, force: true });
    }
    signal.throwIfAborted();
    const failed: string[] = [];
    await Promise.all(
      this.deps.nodeIds().map(async (nodeId) => {
        try {
          const docker = engines.node(nodeId);
          const mine = [`${LABEL.owner}=${owner}`, `${LABEL.run}=${runId}`];
          const helpers = await docker.listContainers({
            all: true,
            filters: { label: [...mine, HELPER_LABEL] },
            abortSignal: quick(),
          } as Docker.ContainerListOptions);
          for (const helper of helpers) await removeHelper(docker.getContainer(helper.Id), log);
          const { Volumes } = await docker.listVolumes({
            filters: { label: [...mine, FORK_BASE_LABEL] },
            abortSignal: quick(),
          } as object);
          for (const volume of Volumes ?? []) {
            const kind = volume.Labels?.[VOLUME_KIND];
            if (kind !== "base" && kind !== "work") continue;
            try {
              await docker.getVolume(volume.Name).remove({ abortSignal: quick() } as object);
            } catch (err) {
              // 409: in use by a fork child still live.
              if (engineStatus(err) !== 404 && engineStatus(err) !== 409) throw err;
            }
          }
        } catch (err) {
          failed.push(`node ${nodeId}: ${errorMessage(err)}`);
        }
      }),
    );
    this.#kept.clear();
    if (failed.length > 0)
      throw new SwarmError("INTERNAL", `run ${runId}'s forks were not all removed: ${failed.join("; ")}`);
  }

  baseVolume(baseId: string): string {
    return `swarmd-${this.deps.owner}-base-${baseId}`;
  }

  #copyOptions(runId: string, signal: AbortSignal) {
    const labels = { [LABEL.owner]: this.deps.owner, [LABEL.run]: runId };
    return { image: this.deps.image, labels, log: this.deps.log, signal };
  }

  async #tree(node: string, volume: string, runId: string, frozen: boolean): Promise<WorkTree> {
    const docker = this.deps.engines.node(node);
    if (!(await volumeExists(docker, volume)))
      throw new SwarmError("SANDBOX_NOT_FOUND", `the volume ${volume} is not on node ${node}`);
    const helper = await createHelper(docker, {
      image: this.deps.image,
      binds: [`${volume}:${VOLUME_TARGETS.work}:ro,nocopy`],
      labels: { [LABEL.owner]: this.deps.owner, [LABEL.run]: runId, [HELPER_LABEL]: "tree" },
    });
    return archiveTree(helper, frozen, () => removeHelper(helper, this.deps.log));
  }

  /** A closed fork child's kept volume: where it was left, or looked for on every node. */
  async #findKept(sandboxId: string, volume: string): Promise<{ node: string; runId: string } | undefined> {
    const known = this.#kept.get(sandboxId);
    const nodes = known ? [known] : this.deps.nodeIds();
    const silent: string[] = [];
    const found = await Promise.all(
      nodes.map(async (node) => {
        try {
          const info = await this.deps.engines
            .node(node)
            .getVolume(volume)
            .inspect({ abortSignal: quick() } as object);
          const labels = (info.Labels ?? {}) as Record<string, string>;
          if (labels[LABEL.owner] !== this.deps.owner || labels[FORK_BASE_LABEL] === undefined) return undefined;
          return { node, runId: labels[LABEL.run] ?? "" };
        } catch (err) {
          if (engineStatus(err) !== 404) silent.push(node);
          return undefined;
        }
      }),
    );
    const hit = found.find((place) => place !== undefined);
    if (hit) this.#kept.set(sandboxId, hit.node);
    else if (silent.length > 0)
      throw new SwarmError(
        "INTERNAL",
        `sandbox ${sandboxId}'s /work was not found, and node ${silent.join(", ")} did not answer`,
      );
    return hit;
  }

  async #base(baseId: string, missing: "SANDBOX_NOT_FOUND" | "SANDBOX_PROVISION_FAILED"): Promise<BaseRecord> {
    const record = await readRecord(this.#baseDir(baseId, missing));
    if (!record) throw new SwarmError(missing, `fork point ${baseId} does not exist`);
    return record;
  }

  #baseDir(baseId: string, code: "SANDBOX_NOT_FOUND" | "SANDBOX_PROVISION_FAILED" | "SNAPSHOT_FAILED"): string {
    if (!ID.test(baseId)) throw new SwarmError(code, `${JSON.stringify(baseId)} is not a fork point id`);
    return join(this.#bases, baseId);
  }
}

async function readRecord(dir: string): Promise<BaseRecord | undefined> {
  try {
    const parsed = BaseRecord.safeParse(JSON.parse(await readFile(join(dir, "base.json"), "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function volumeExists(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getVolume(name).inspect({ abortSignal: quick() } as object);
    return true;
  } catch (err) {
    if (engineStatus(err) === 404) return false;
    throw err;
  }
}

async function removeVolume(docker: Docker, name: string): Promise<void> {
  try {
    await docker.getVolume(name).remove({ abortSignal: quick() } as object);
  } catch (err) {
    if (engineStatus(err) !== 404) throw err;
  }
}

/** A folder untouched for a minute: a half-made one no call is still making. */
async function isOld(dir: string): Promise<boolean> {
  const info = await stat(dir).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs > 60_000;
}
