import { mkdirSync, realpathSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import PQueue from "p-queue";
import { errorMessage, isSwarmError, SwarmError } from "../../errors.ts";
import { type DiskWatch, measuredBytes, startDiskWatch } from "../disk-watch.ts";
import { applyHostChanges } from "../host/host-apply.ts";
import { HostForks } from "../host/host-forks.ts";
import { assertInputNames } from "../input-names.ts";
import { createKeyedLock } from "../keyed-lock.ts";
import { localNode } from "../local-node.ts";
import { stopUserNet } from "../network/user-net.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxInfo, type SandboxLimits, type SandboxRuntime } from "../runtime.ts";
import { connectSocket } from "../socket-connect.ts";
import { bytesWritten, overDiskLimit } from "../work-tree.ts";
import { findBubblewrap } from "./bubblewrap.ts";
import { detectCgroupHierarchy } from "./cgroup-freezer.ts";
import { detectLimitControllers, LIMIT_CONTROLLERS, releaseLimits } from "./cgroup-limits.ts";
import { hibernateHarness, startHarness } from "./harness-start.ts";
import { writeInputFiles } from "./input-files.ts";
import { createLauncher } from "./launcher.ts";
import {
  findRecord,
  freezerOf,
  infoOf,
  layoutOf,
  liveRecord,
  ownedRecord,
  type RuntimeContext,
  statusOf,
  UNABORTABLE,
} from "./runtime-context.ts";
import { copyParentWork, createSandbox, forkSandbox, whileFrozen } from "./sandbox-create.ts";
import { createSandboxEtc } from "./sandbox-etc.ts";
import { sandboxesDir } from "./sandbox-layout.ts";
import { closeLeftPool, createSandboxPool, type SandboxPool } from "./sandbox-pool.ts";
import { type FreezerKind, isMissing, type SandboxRecord, writeRecord } from "./sandbox-record.ts";

/** Where the runtime reports what it decided (pino and console both fit). */
export interface RuntimeLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface ProcessRuntimeOptions {
  /** The service's data folder; sandboxes live in `<dataDir>/sandboxes/<sandboxId>/`. */
  dataDir: string;
  logger?: RuntimeLogger;
  /**
   * `bubblewrap` (default): fail with `RUNTIME_UNAVAILABLE` when bwrap is missing or cannot make
   * namespaces here. `none`: sandboxes run unisolated (with one warning); only an operator may ask.
   */
  isolation?: "bubblewrap" | "none";
  /** The one bwrap binary to try; default: the first found in /usr/bin, /usr/local/bin, then PATH. */
  bwrap?: string;
  /** `auto` (default): a writable cgroup freezer (v2, then v1), else SIGSTOP/SIGCONT. */
  freezer?: "auto" | FreezerKind;
  /** Pause between two rounds of the disk quota watch. Default 2 s. */
  diskWatchIntervalMs?: number;
  /** How long `startHarness` waits for the harness socket. Default 30 s. */
  harnessStartTimeoutMs?: number;
  /**
   * Sandboxes to keep made with their harness started, for agents to take (`SWARM_POOL_SIZE`,
   * sandbox-pool.ts), made with `limits` (default `DEFAULT_SANDBOX_LIMITS`). Default 0: none. Only
   * with bubblewrap: an unisolated harness is started with its sandbox's host paths.
   */
  pool?: { size: number; limits?: SandboxLimits };
}

/** The `process` runtime, telling what it chose for the sandboxes it makes. */
export interface ProcessRuntime extends SandboxRuntime {
  readonly kind: "process";
  readonly isolation: "bubblewrap" | "none";
  readonly freezer: FreezerKind;
  /** The disk quota watch of this runtime's sandboxes. */
  readonly diskWatch: DiskWatch;
  /** The sandboxes made ahead for agents to take, when the runtime keeps any. */
  readonly pool: SandboxPool | undefined;
  dispose(): Promise<void>;
}

/** Sandbox records the disk watch reads at once in each round. */
const LIST_READS = 8;

const stderrLogger: RuntimeLogger = {
  info: () => undefined,
  warn: (message) => process.stderr.write(`swarmd: ${message}\n`),
};

/**
 * The embedded runtime: a folder per sandbox, the harness as a detached process (it survives a
 * service restart; a new runtime on the same data folder finds it through the ownership record),
 * isolated with bubblewrap and frozen with the cgroup freezer when the machine has them.
 * Freezing or thawing a sandbox whose harness was never started does nothing: it has no processes.
 * Throws `RUNTIME_UNAVAILABLE` when bubblewrap (unless isolation is `none`) or a freezer asked for
 * by name is missing: it never falls back to running sandboxes unisolated.
 */
export function createProcessRuntime(options: ProcessRuntimeOptions): ProcessRuntime {
  const logger = options.logger ?? stderrLogger;
  mkdirSync(sandboxesDir(resolve(options.dataDir)), { recursive: true });
  const dataDir = realpathSync(resolve(options.dataDir));

  const bwrap = findBubblewrap(options.bwrap);
  const isolation = options.isolation ?? "bubblewrap";
  if (isolation === "bubblewrap" && bwrap === undefined) {
    throw new SwarmError(
      "RUNTIME_UNAVAILABLE",
      `bubblewrap isolation is unavailable: ${options.bwrap ?? "bwrap"} is missing or cannot create namespaces here`,
    );
  }
  const wanted = options.freezer ?? "auto";
  const hierarchy = wanted === "signal" ? undefined : detectCgroupHierarchy(wanted === "auto" ? undefined : wanted);
  if (wanted !== "auto" && wanted !== "signal" && hierarchy === undefined)
    throw new SwarmError("RUNTIME_UNAVAILABLE", `no writable ${wanted} freezer on this machine`);
  const limitHomes = detectLimitControllers();
  const missing = LIMIT_CONTROLLERS.filter((c) => !limitHomes.some((h) => h.controller === c));
  if (isolation === "bubblewrap" && missing.length > 0) {
    throw new SwarmError(
      "RUNTIME_UNAVAILABLE",
      `sandbox resource limits are unavailable: no writable cgroup ${missing.join(", ")} controller here (run swarmd as root on a machine with cgroups, or set SWARM_ISOLATION=none to run unisolated and unbounded)`,
    );
  }
  const ctx: RuntimeContext = {
    forks: new HostForks(dataDir, (message) => logger.warn(message)),
    dataDir,
    bwrap,
    etc: bwrap === undefined ? undefined : createSandboxEtc({ dir: join(dataDir, "etc") }),
    isolation,
    separateUsers: isolation === "bubblewrap" && process.getuid?.() === 0,
    freezer: hierarchy?.kind ?? "signal",
    hierarchy,
    limitHomes,
    harnessStartTimeoutMs: options.harnessStartTimeoutMs ?? 30_000,
    lock: createKeyedLock(),
    launcher: createLauncher(),
  };
  logger.info(
    `process runtime on ${dataDir}: isolation ${isolation}${bwrap ? ` (${bwrap})` : ""}, freezer ${ctx.freezer}${hierarchy ? ` (${hierarchy.base})` : ""}, limits ${limitHomes.map((h) => `${h.controller} v${h.version}`).join(", ") || "none"}`,
  );
  if (isolation === "none")
    logger.warn(
      "isolation is turned off: sandboxes run UNISOLATED, with the host's network, processes and files, and see host paths instead of /work and /inputs",
    );
  if (ctx.freezer === "signal" && wanted === "auto")
    logger.warn("no writable cgroup freezer: sandboxes are paused with SIGSTOP/SIGCONT");

  const poolSize = isolation === "bubblewrap" ? (options.pool?.size ?? 0) : 0;
  const pool =
    poolSize > 0
      ? createSandboxPool(ctx, {
          size: poolSize,
          limits: options.pool?.limits ?? DEFAULT_SANDBOX_LIMITS,
          log: (message) => logger.warn(message),
        })
      : undefined;
  // A pool left by an earlier daemon is closed even when this one keeps none.
  if (!pool) void closeLeftPool(ctx);

  const diskWatch = startDiskWatch({
    intervalMs: options.diskWatchIntervalMs,
    log: (message) => logger.warn(message),
    ...(ctx.launcher ? { run: ctx.launcher.run } : {}),
    list: async () => {
      // A few records at a time: 1,000 reads at once would queue every other file operation of the
      // daemon (a start's, a control's) behind them in node's thread pool, for each round.
      const names = await readdir(sandboxesDir(dataDir));
      const reads = new PQueue({ concurrency: LIST_READS });
      const found = await reads.addAll(names.map((name) => () => findRecord(ctx, name)));
      return found.flatMap((f) =>
        f?.record.harness && !f.record.stoppedFor
          ? [
              {
                sandboxId: f.record.sandboxId,
                dirs: countedDirs(f.layout.root, f.record.sandboxId),
                limitBytes: (f.record.limits ?? DEFAULT_SANDBOX_LIMITS).diskMiB * 1024 * 1024,
              },
            ]
          : [],
      );
    },
    stop: (sandboxId, reason) =>
      ctx.lock(sandboxId, async () => {
        const found = await findRecord(ctx, sandboxId);
        if (!found) return;
        await writeRecord(found.layout, { ...found.record, stoppedFor: reason });
        await freezerOf(found.record).killAll(UNABORTABLE);
      }),
  });

  /**
   * What counts against a sandbox's disk limit: its folder (`du -x` stays on its file system, so a
   * fork child's overlay /work is not walked), and a fork child's own layer, never the fork point
   * it shares with its siblings.
   */
  const countedDirs = (root: string, sandboxId: string): string[] => {
    const layer = ctx.forks.ownLayer(sandboxId);
    return layer ? [root, layer] : [root];
  };

  /** The records of every sandbox this data folder owns. */
  const ownedRecords = async (): Promise<SandboxRecord[]> => {
    const names = await readdir(sandboxesDir(dataDir)).catch((err: unknown) => {
      if (isMissing(err)) return [];
      throw err;
    });
    const found = await Promise.all(names.map((name) => findRecord(ctx, name)));
    return found.flatMap((f) => (f ? [f.record] : []));
  };

  /** An aborted call leaves nothing behind: a sandbox taken while the signal aborted is closed. */
  const closeIfAborted = async (sandboxId: string, signal: AbortSignal) => {
    if (!signal.aborted) return;
    await runtime.close(sandboxId, UNABORTABLE);
    throw signal.reason;
  };

  const runtime: ProcessRuntime = {
    kind: "process",
    harnessOutOfReach: ctx.separateUsers,
    diskWatch,
    isolation,
    freezer: ctx.freezer,

    pool,
    provision: async (req, signal) => {
      const taken = await pool?.take(req, signal);
      if (!taken) return createSandbox(ctx, req, signal);
      await closeIfAborted(req.sandboxId, signal);
      return taken;
    },
    dispose: async () => {
      await pool?.close();
      ctx.launcher?.close();
    },
    async fork(parentId, req, signal) {
      // A child copies its parent's files into a pooled sandbox as into a new one (a fork child's
      // fork point is mounted at its start: it starts cold).
      if (pool && !req.fork && pool.coldReason(req) === undefined) {
        await liveRecord(ctx, parentId);
        const taken = await pool.take(req, signal, copyParentWork(ctx, parentId, signal));
        if (taken) {
          await closeIfAborted(req.sandboxId, signal);
          return taken;
        }
      }
      return forkSandbox(ctx, parentId, req, signal);
    },

    async writeInputs(sandboxId, files, signal) {
      signal.throwIfAborted();
      assertInputNames(Object.keys(files));
      const { layout } = await ownedRecord(ctx, sandboxId);
      await writeInputFiles(layout, files, signal);
    },

    startHarness: (sandboxId, signal) => startHarness(ctx, sandboxId, signal),
    hibernate: (sandboxId, signal) => hibernateHarness(ctx, sandboxId, signal),

    async connect(sandboxId, signal) {
      signal.throwIfAborted();
      const layout = layoutOf(ctx, sandboxId);
      if (!layout) throw new SwarmError("HARNESS_UNREACHABLE", `harness of sandbox ${sandboxId}: not a sandbox id`);
      return connectSocket(layout.socket, signal);
    },

    freeze: (sandboxId, signal) =>
      ctx.lock(sandboxId, async () => {
        signal.throwIfAborted();
        const { record } = await liveRecord(ctx, sandboxId);
        if (record.harness === undefined) return; // nothing runs yet, nothing to suspend
        const freezer = freezerOf(record);
        try {
          await freezer.freeze(signal);
        } catch (err) {
          // Half frozen is the one state nobody asked for: undo.
          await freezer.thaw(UNABORTABLE).catch(() => undefined);
          if (signal.aborted) throw signal.reason;
          throw new SwarmError("SANDBOX_FREEZE_FAILED", `sandbox ${sandboxId}: ${errorMessage(err)}`, { cause: err });
        }
      }),

    thaw: (sandboxId, signal) =>
      ctx.lock(sandboxId, async () => {
        signal.throwIfAborted();
        const { record } = await liveRecord(ctx, sandboxId);
        if (record.harness === undefined) return;
        try {
          await freezerOf(record).thaw(signal);
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          throw new SwarmError("SANDBOX_THAW_FAILED", `sandbox ${sandboxId}: ${errorMessage(err)}`, { cause: err });
        }
      }),

    close: (sandboxId, signal) =>
      ctx.lock(sandboxId, async () => {
        signal.throwIfAborted();
        const layout = layoutOf(ctx, sandboxId);
        if (!layout) return;
        const found = await findRecord(ctx, sandboxId);
        // No record: closed already, half-made (no process is started before the record exists),
        // or another data folder's; only a leftover folder is ours to remove.
        try {
          if (found) {
            const freezer = freezerOf(found.record);
            await freezer.killAll(signal);
            await freezer.release();
            await releaseLimits(found.record.limitCgroups ?? []);
            // Its slirp4netns ends with the sandbox's last process (--exit-fd); this makes sure.
            if (found.record.network) await stopUserNet(sandboxId, found.record.userNet);
          }
          // A fork child's changes stay with its run: its overlay is unmounted, or its copy kept.
          await ctx.forks.releaseChild(sandboxId, layout.work);
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          throw isSwarmError(err)
            ? err
            : new SwarmError("INTERNAL", `closing sandbox ${sandboxId}: ${errorMessage(err)}`, { cause: err });
        }
        await rm(layout.root, { recursive: true, force: true });
      }),

    async inspect(sandboxId, signal): Promise<SandboxInfo | undefined> {
      signal.throwIfAborted();
      const found = await findRecord(ctx, sandboxId);
      return found && infoOf(found.record);
    },

    async list(signal) {
      signal.throwIfAborted();
      const records = await ownedRecords();
      return Promise.all(records.map(infoOf));
    },

    async nodes(signal) {
      signal.throwIfAborted();
      const records = await ownedRecords();
      const statuses = await Promise.all(records.map(statusOf));
      return [
        localNode(records.filter((_, i) => statuses[i] !== "gone").map((r) => r.limits ?? DEFAULT_SANDBOX_LIMITS)),
      ];
    },

    snapshot: (sandboxId, baseId, runId, signal, copies) =>
      whileFrozen(ctx, sandboxId, signal, ({ layout }) =>
        ctx.forks.snapshot({ work: layout.work, control: layout.control }, baseId, runId, signal, copies),
      ),

    async openTree(ref, signal) {
      signal.throwIfAborted();
      const live = "sandboxId" in ref ? await findRecord(ctx, ref.sandboxId) : undefined;
      return ctx.forks.openTree(ref, live?.layout.work, signal);
    },

    applyChanges: (sandboxId, changes, signal) =>
      whileFrozen(ctx, sandboxId, signal, async ({ layout, record }) => {
        const limitBytes = (record.limits ?? DEFAULT_SANDBOX_LIMITS).diskMiB * 1024 * 1024;
        const bytes = (await measuredBytes(countedDirs(layout.root, sandboxId))) + bytesWritten(changes);
        if (bytes > limitBytes) throw overDiskLimit(sandboxId, bytes, limitBytes);
        const owner = record.users ? { uid: record.users.agent, gid: record.users.agent } : undefined;
        await applyHostChanges(layout.work, changes, owner, signal);
      }),

    dropRun: async (runId, signal) => {
      signal.throwIfAborted();
      await ctx.forks.dropRun(runId);
    },

    controlDir(sandboxId) {
      const layout = layoutOf(ctx, sandboxId);
      if (!layout) throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(sandboxId)} is not a sandbox id`);
      return layout.control;
    },
  };
  return runtime;
}
