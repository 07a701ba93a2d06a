import { chmod, chown, mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, isSwarmError, SwarmError } from "../../errors.ts";
import { copyTree } from "../copy-tree.ts";
import { userNetUnavailable } from "../network/user-net.ts";
import { DEFAULT_SANDBOX_LIMITS, LOCAL_NODE_ID, type ProvisionRequest, type SandboxInfo } from "../runtime.ts";
import { MAX_SOCKET_PATH_BYTES } from "../socket-connect.ts";
import { limitCgroupsFor } from "./cgroup-limits.ts";
import { freezerOf, liveRecord, type RuntimeContext, UNABORTABLE } from "./runtime-context.ts";
import { isValidSandboxId, type SandboxLayout, sandboxLayout } from "./sandbox-layout.ts";
import { type SandboxRecord, writeRecord } from "./sandbox-record.ts";
import { giveFolders, usersForRun } from "./sandbox-users.ts";

/**
 * Make a sandbox folder (`work/`, `inputs/`, `control/spec.json`), let `fill` put files into it,
 * and write the ownership record last: a folder without a record was never handed out. Any
 * failure or abort removes the folder again.
 */
export function createSandbox(
  ctx: RuntimeContext,
  req: ProvisionRequest,
  signal: AbortSignal,
  fill?: (layout: SandboxLayout) => Promise<void>,
): Promise<SandboxInfo> {
  return ctx.lock(req.sandboxId, async () => {
    signal.throwIfAborted();
    if (!isValidSandboxId(req.sandboxId))
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `sandbox id ${JSON.stringify(req.sandboxId)} is not a plain name`,
      );
    const noUserNet = req.network === true && ctx.isolation === "bubblewrap" ? userNetUnavailable() : undefined;
    if (noUserNet !== undefined)
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `sandbox ${req.sandboxId}: ${noUserNet}`);
    const layout = sandboxLayout(ctx.dataDir, req.sandboxId);
    if (Buffer.byteLength(layout.socket) > MAX_SOCKET_PATH_BYTES) {
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `the harness socket path ${layout.socket} is longer than ${MAX_SOCKET_PATH_BYTES} bytes; use a shorter data folder`,
      );
    }
    try {
      await mkdir(layout.root, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST")
        throw new SwarmError("SANDBOX_EXISTS", `sandbox ${req.sandboxId} already exists`);
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `cannot create ${layout.root}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    try {
      await Promise.all([mkdir(layout.work), mkdir(layout.inputs), mkdir(layout.control, { mode: 0o700 })]);
      await writeFile(layout.spec, JSON.stringify(req.spec), { mode: 0o600 });
      const users = ctx.separateUsers ? usersForRun(req.runId) : undefined;
      if (users) await giveFolders(layout, users);
      signal.throwIfAborted();
      await fill?.(layout);
      signal.throwIfAborted();
      const record: SandboxRecord = {
        version: 1,
        sandboxId: req.sandboxId,
        runId: req.runId,
        agentId: req.agentId,
        createdAt: new Date().toISOString(),
        network: req.network ?? false,
        env: req.env ?? {},
        isolation: ctx.isolation,
        freezer: ctx.freezer,
        ...(ctx.hierarchy ? { cgroupDir: join(ctx.hierarchy.base, req.sandboxId) } : {}),
        limits: req.limits ?? DEFAULT_SANDBOX_LIMITS,
        limitCgroups: limitCgroupsFor(ctx.limitHomes, req.sandboxId),
        ...(users ? { users } : {}),
      };
      await writeRecord(layout, record);
      signal.throwIfAborted();
      return {
        sandboxId: req.sandboxId,
        runId: req.runId,
        agentId: req.agentId,
        status: "running",
        node: LOCAL_NODE_ID,
      };
    } catch (err) {
      await ctx.forks.releaseChild(req.sandboxId, layout.work).catch(() => undefined);
      await rm(layout.root, { recursive: true, force: true });
      if (signal.aborted) throw signal.reason;
      if (isSwarmError(err)) throw err;
      throw new SwarmError("SANDBOX_PROVISION_FAILED", `sandbox ${req.sandboxId}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  });
}

/**
 * A new sandbox whose `work/` is a copy of the parent's. The parent is frozen for the copy so the
 * files are one moment's state, not a mix of before and after a write, then left as it was. A fork
 * child (`req.fork`) starts from its fork point instead: see `HostForks`.
 */
export async function forkSandbox(
  ctx: RuntimeContext,
  parentId: string,
  req: ProvisionRequest,
  signal: AbortSignal,
): Promise<SandboxInfo> {
  signal.throwIfAborted();
  const { fork } = req;
  if (fork) {
    return createSandbox(ctx, req, signal, (layout) => {
      const users = ctx.separateUsers ? usersForRun(req.runId) : undefined;
      const owners = users ? { harness: { uid: users.harness, gid: users.harness } } : {};
      return ctx.forks.makeChild(
        fork,
        { sandboxId: req.sandboxId, work: layout.work, control: layout.control },
        owners,
        signal,
      );
    });
  }
  await liveRecord(ctx, parentId);
  return createSandbox(ctx, req, signal, copyParentWork(ctx, parentId, signal));
}

/**
 * Fill a new sandbox's `work/` with a copy of the live parent's, the parent frozen meanwhile. A
 * parent whose `work/` is empty when looked at (a fan-out from a fresh root) has nothing to copy:
 * the child's folder only takes its owner and mode, without freezing the parent or running `cp`.
 */
export function copyParentWork(
  ctx: RuntimeContext,
  parentId: string,
  signal: AbortSignal,
): (layout: SandboxLayout) => Promise<void> {
  return async (layout) => {
    const copiedEmpty = await ctx.lock(parentId, async () => {
      const { layout: parent } = await liveRecord(ctx, parentId);
      const names = await readdir(parent.work);
      if (names.length > 0) return false;
      const folder = await stat(parent.work);
      await chown(layout.work, folder.uid, folder.gid);
      await chmod(layout.work, folder.mode & 0o7777);
      return true;
    });
    if (!copiedEmpty)
      await whileFrozen(ctx, parentId, signal, (parent) => copyTree(parent.layout.work, layout.work, signal));
  };
}

/**
 * Run `work` under the sandbox's lock with its processes frozen (one whose harness is not running
 * has none), and leave it as it was: a frozen one stays frozen.
 */
export function whileFrozen<T>(
  ctx: RuntimeContext,
  sandboxId: string,
  signal: AbortSignal,
  work: (found: { layout: SandboxLayout; record: SandboxRecord }) => Promise<T>,
): Promise<T> {
  return ctx.lock(sandboxId, async () => {
    const found = await liveRecord(ctx, sandboxId);
    const freezer = freezerOf(found.record);
    const freezeForWork = found.record.harness !== undefined && !(await freezer.isFrozen());
    if (freezeForWork)
      await freezer.freeze(signal).catch(async (err: unknown) => {
        await freezer.thaw(UNABORTABLE);
        throw err;
      });
    try {
      return await work(found);
    } finally {
      if (freezeForWork) await freezer.thaw(UNABORTABLE);
    }
  });
}
