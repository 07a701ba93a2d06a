import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chmod, chown, lchown, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage } from "../../errors.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import { AgentSpecSchema } from "../../spec/agent-spec.ts";
import { replaceFile } from "../replace-file.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  LOCAL_NODE_ID,
  type ProvisionRequest,
  type SandboxInfo,
  type SandboxLimits,
} from "../runtime.ts";
import { MAX_SOCKET_PATH_BYTES } from "../socket-connect.ts";
import { applyLimits, limitCgroupsFor, releaseLimits } from "./cgroup-limits.ts";
import { launchHarness } from "./harness-start.ts";
import { freezerOf, type RuntimeContext, statusOf, UNABORTABLE } from "./runtime-context.ts";
import { isValidSandboxId, layoutAt, poolDir, type SandboxLayout, sandboxLayout } from "./sandbox-layout.ts";
import { readRecord, type SandboxRecord, writeRecord } from "./sandbox-record.ts";
import { SANDBOX_TAG_VAR } from "./sandbox-tag.ts";
import { usersForRun } from "./sandbox-users.ts";

/**
 * Sandboxes made and harnesses started ahead of any agent (`SWARM_POOL_SIZE`), so that an agent
 * whose spec fits takes one instead of waiting for a start. Each is taken by exactly one agent and
 * never given back: its sandbox closes with that agent, and the pool makes a new one.
 */
export interface SandboxPool {
  /** How many the pool keeps ready. */
  readonly size: number;
  /**
   * Hand a ready sandbox to `req` (moved to `sandboxes/<sandboxId>/`, with its run's users, the
   * spec, its env for the tools and its limits applied), or `undefined` when none is ready or the
   * request needs what a pooled sandbox cannot be given afterwards (`coldReason`): the caller then
   * makes one as usual. `fillWork` puts files into its `/work` once it is the agent's (a child's copy of
   * its parent's); when it fails, the sandbox is closed and its error thrown.
   */
  take(
    req: ProvisionRequest,
    signal: AbortSignal,
    fillWork?: (layout: SandboxLayout) => Promise<void>,
  ): Promise<SandboxInfo | undefined>;
  /** Why `req` cannot take a pooled sandbox, or `undefined` when it can. */
  coldReason(req: ProvisionRequest): string | undefined;
  /** Sandboxes ready to be taken now. */
  ready(): number;
  /** Resolves once `size` are ready (benchmarks wait for it between two timed starts). */
  whenFull(signal: AbortSignal): Promise<void>;
  /** Memory the ready sandboxes hold now (their cgroups' counters), in bytes. */
  memoryBytes(): number;
  /** Stop making new ones and close the ready ones. Idempotent. */
  close(): Promise<void>;
}

interface Pooled {
  layout: SandboxLayout;
  record: SandboxRecord;
}

/** Consecutive failed starts after which the pool stops trying (and says why). */
const MAX_FAILURES = 5;
const RETRY_MS = 1000;

/**
 * The process runtime's pool: `size` bubblewrap sandboxes under `<dataDir>/pool/`, each with its
 * harness started (`--pooled`) and answering on its socket, made one at a time. Sandboxes a
 * previous daemon left there were never taken: they are closed first.
 */
export function createSandboxPool(
  ctx: RuntimeContext,
  options: { size: number; limits: SandboxLimits; log(message: string): void },
): SandboxPool {
  const { size, limits } = options;
  const dir = poolDir(ctx.dataDir);
  const ready: Pooled[] = [];
  let closed = false;
  let filling: Promise<void> | undefined;
  let failures = 0;
  const stop = new AbortController();

  const sweep = closeLeftPool(ctx);

  async function makeOne(): Promise<Pooled> {
    const id = `pool-${randomUUID()}`;
    const layout = layoutAt(join(dir, id));
    await mkdir(layout.root, { mode: 0o700 });
    try {
      await Promise.all([mkdir(layout.work), mkdir(layout.inputs), mkdir(layout.control, { mode: 0o700 })]);
      const users = ctx.separateUsers ? usersForRun(id) : undefined;
      if (users) {
        await Promise.all([
          chown(layout.work, users.agent, users.agent),
          chown(layout.inputs, users.agent, users.agent),
        ]);
        await chown(layout.control, users.harness, users.harness);
      }
      const record: SandboxRecord = {
        version: 1,
        sandboxId: id,
        runId: "",
        agentId: "",
        createdAt: new Date().toISOString(),
        network: false,
        env: {},
        isolation: ctx.isolation,
        freezer: ctx.freezer,
        ...(ctx.hierarchy ? { cgroupDir: join(ctx.hierarchy.base, id) } : {}),
        limits,
        limitCgroups: limitCgroupsFor(ctx.limitHomes, id),
        ...(users ? { users } : {}),
      };
      await writeRecord(layout, record);
      return { layout, record: await launchHarness(ctx, layout, record, stop.signal, true) };
    } catch (err) {
      await closePooled(layout);
      throw err;
    }
  }

  /** Keep making sandboxes, one at a time, until `size` are ready. */
  function fill(): void {
    if (filling || closed) return;
    filling = (async () => {
      await sweep;
      while (!closed && ready.length < size && failures < MAX_FAILURES) {
        try {
          const made = await makeOne();
          if (closed) await closePooled(made.layout);
          else ready.push(made);
          failures = 0;
        } catch (err) {
          if (closed) break;
          failures++;
          options.log(
            `pool: a sandbox could not be made ahead (${errorMessage(err)})${failures >= MAX_FAILURES ? `; the pool stops after ${MAX_FAILURES} failures in a row` : ""}`,
          );
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    })().finally(() => {
      filling = undefined;
    });
  }

  const pool: SandboxPool = {
    size,
    coldReason(req) {
      // What the harness would refuse at its start is refused there, as without a pool.
      if (!AgentSpecSchema.safeParse(req.spec).success) return "a spec its harness refuses";
      if (req.network) return "a networked spec";
      if (req.fork) return "a fork";
      const wanted = req.limits ?? DEFAULT_SANDBOX_LIMITS;
      if (wanted.tmpMiB !== limits.tmpMiB) return "a /tmp size other than the pool's";
      if (wanted.diskMiB !== limits.diskMiB) return "a disk limit other than the pool's";
      return undefined;
    },
    ready: () => ready.length,

    take: (req, signal, fillWork) =>
      ctx.lock(req.sandboxId, async () => {
        signal.throwIfAborted();
        if (closed || pool.coldReason(req) !== undefined || !isValidSandboxId(req.sandboxId)) return undefined;
        const dest = sandboxLayout(ctx.dataDir, req.sandboxId);
        // What only the usual path says (a taken id, a socket path too long): it says it.
        if (Buffer.byteLength(dest.socket) > MAX_SOCKET_PATH_BYTES || existsSync(dest.root)) return undefined;
        try {
          for (let taken = ready.shift(); taken; taken = ready.shift()) {
            try {
              return await hand(taken, req, dest, fillWork);
            } catch (err) {
              await closePooled(taken.layout);
              if (err instanceof FillFailed) throw err.cause;
              options.log(`pool: sandbox ${taken.record.sandboxId} could not be taken: ${errorMessage(err)}`);
            }
          }
          return undefined;
        } finally {
          // After the take, not during it: making the next one competes for the same cores.
          fill();
        }
      }),

    async whenFull(signal) {
      fill();
      while (ready.length < size && !closed && failures < MAX_FAILURES) {
        signal.throwIfAborted();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },

    memoryBytes: () =>
      ready.reduce((sum, { record }) => {
        const memory = record.limitCgroups?.find((c) => c.controller === "memory");
        if (!memory) return sum;
        const file = memory.version === 2 ? "memory.current" : "memory.usage_in_bytes";
        try {
          return sum + Number(readFileSync(join(memory.dir, file), "utf8").trim());
        } catch {
          return sum;
        }
      }, 0),

    async close() {
      closed = true;
      stop.abort(new Error("the pool is closing"));
      await filling?.catch(() => undefined);
      await sweep;
      await Promise.all(ready.splice(0).map((p) => closePooled(p.layout)));
    },
  };

  /**
   * Give one ready sandbox to `req`: the spec and `take.json` (its run's users, the spec's env)
   * written where its harness reads them when its agent is made, the folders handed to the run's
   * users, its limits written into its cgroups, and its record, now the agent's, written before the
   * folder moves into `sandboxes/` (a daemon that dies between the two leaves it in the pool, which
   * the next daemon closes).
   */
  async function hand(
    { layout, record }: Pooled,
    req: ProvisionRequest,
    dest: SandboxLayout,
    fillWork?: (layout: SandboxLayout) => Promise<void>,
  ): Promise<SandboxInfo> {
    if ((await statusOf(record)) !== "running") throw new Error("its harness is gone");
    const users = ctx.separateUsers ? usersForRun(req.runId) : undefined;
    const { [SANDBOX_TAG_VAR]: _tag, ...env } = req.env ?? {};
    // Its tools carry the agent's sandbox's tag; the harness keeps its pool id's (`tag` in the record).
    const take = {
      env: { ...env, [SANDBOX_TAG_VAR]: req.sandboxId },
      ...(users
        ? { harness: { uid: users.harness, gid: users.harness }, agent: { uid: users.agent, gid: users.agent } }
        : {}),
    };
    const takePath = join(layout.control, CONTROL_FILES.take);
    // The control folder is its pool user's to write: nothing planted there is written through.
    await replaceFile(takePath, JSON.stringify(take), 0o600);
    await replaceFile(layout.spec, JSON.stringify(req.spec), 0o600);
    const wanted = req.limits ?? DEFAULT_SANDBOX_LIMITS;
    await applyLimits(record.limitCgroups ?? [], wanted);
    if (users && record.users) {
      await Promise.all([chown(layout.work, users.agent, users.agent), chown(layout.inputs, users.agent, users.agent)]);
      // The control folder and what is in it become the run's harness user's, but take.json, which the
      // pooled harness reads (as its pool user) before it becomes that user: the folder's group stays
      // the pool user's own, which no other process has, so it can reach the file until then.
      const names = (await readdir(layout.control)).filter((name) => name !== CONTROL_FILES.take);
      await Promise.all(names.map((name) => handOver(join(layout.control, name), users.harness)));
      await lchown(takePath, record.users.harness, record.users.harness);
      await chown(layout.control, users.harness, record.users.harness);
      await chmod(layout.control, 0o750);
    }
    await fillWork?.(layout).catch((err: unknown) => {
      throw new FillFailed(err);
    });
    const agents: SandboxRecord = {
      ...record,
      sandboxId: req.sandboxId,
      runId: req.runId,
      agentId: req.agentId,
      createdAt: new Date().toISOString(),
      env: req.env ?? {},
      limits: wanted,
      tag: record.sandboxId,
      ...(users ? { users } : {}),
    };
    await writeRecord(layout, agents);
    await rename(layout.root, dest.root);
    return { sandboxId: req.sandboxId, runId: req.runId, agentId: req.agentId, status: "running", node: LOCAL_NODE_ID };
  }

  fill();
  return pool;
}

/**
 * Close what an earlier daemon left in the pool: sandboxes no agent took (or one whose take it did
 * not finish moving). Never throws.
 */
export async function closeLeftPool(ctx: RuntimeContext): Promise<void> {
  const dir = poolDir(ctx.dataDir);
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.map((name) => closePooled(layoutAt(join(dir, name)))));
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => undefined);
}

/** Kill a pooled sandbox's processes and remove it with its cgroups. Never throws. */
async function closePooled(layout: SandboxLayout): Promise<void> {
  const record = await readRecord(layout).catch(() => undefined);
  if (record) {
    const freezer = freezerOf(record);
    await freezer.killAll(UNABORTABLE).catch(() => undefined);
    await freezer.release().catch(() => undefined);
    await releaseLimits(record.limitCgroups ?? []).catch(() => undefined);
  }
  await rm(layout.root, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Give an entry of a pooled control folder to `uid`: the entry itself, never what a link names
 * (`lchown`), and never a file with another name elsewhere (a hard link: its owner would change
 * too), which fails the take.
 */
async function handOver(path: string, uid: number): Promise<void> {
  const stat = await lstat(path);
  if (!stat.isDirectory() && stat.nlink > 1) throw new Error(`${path} is a hard link`);
  await lchown(path, uid, uid);
}

/** The caller's `fill` failed: its error, not the pool's. */
class FillFailed extends Error {
  constructor(cause: unknown) {
    super("fill failed", { cause });
  }
}
