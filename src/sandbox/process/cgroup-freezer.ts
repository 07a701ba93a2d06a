import { accessSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { pollUntil } from "../poll.ts";
import type { Freezer } from "./freezer.ts";
import { FREEZER_DEADLINE_MS } from "./freezer.ts";
import { isAliveProc, readProcSync, signalPid } from "./proc-table.ts";
import { isMissing } from "./sandbox-record.ts";

export type CgroupKind = "cgroup-v2" | "cgroup-v1";

/** A writable freezer hierarchy: sandbox cgroups are made under `base` (`<hierarchy>/swarmd`). */
export interface CgroupHierarchy {
  kind: CgroupKind;
  base: string;
}

const CANDIDATES: { kind: CgroupKind; root: string; marker: string; control: string }[] = [
  // v2 roots carry `cgroup.controllers`; a hybrid machine mounts v2 at `unified`.
  { kind: "cgroup-v2", root: "/sys/fs/cgroup", marker: "cgroup.controllers", control: "cgroup.freeze" },
  { kind: "cgroup-v2", root: "/sys/fs/cgroup/unified", marker: "cgroup.controllers", control: "cgroup.freeze" },
  { kind: "cgroup-v1", root: "/sys/fs/cgroup/freezer", marker: "cgroup.procs", control: "freezer.state" },
];

/**
 * The first cgroup freezer this process can use, or `undefined`. Probing creates `swarmd/` under
 * the hierarchy, because the root cgroup has no freezer file of its own to test.
 */
export function detectCgroupHierarchy(only?: CgroupKind): CgroupHierarchy | undefined {
  for (const candidate of CANDIDATES) {
    if (only !== undefined && candidate.kind !== only) continue;
    if (!existsSync(join(candidate.root, candidate.marker))) continue;
    const base = join(candidate.root, "swarmd");
    try {
      mkdirSync(base, { recursive: true });
      accessSync(join(base, candidate.control), constants.W_OK);
      accessSync(join(base, "cgroup.procs"), constants.W_OK);
      return { kind: candidate.kind, base };
    } catch {}
  }
  return undefined;
}

/**
 * The cgroup is not there: never made, or removed. A read that opened the file just before the
 * cgroup was removed (another caller closing the sandbox) fails with ENODEV rather than ENOENT.
 */
function isRemoved(err: unknown): boolean {
  return isMissing(err) || (err as NodeJS.ErrnoException | undefined)?.code === "ENODEV";
}

/**
 * A sandbox's own cgroup `dir`. The harness joins it before it execs, so every tool process it
 * spawns (whatever its session or process group) is a member; the kernel then freezes, lists and
 * kills them as one.
 *
 * Its files (and /proc's) are read and written synchronously: the kernel answers them from memory,
 * without a disk, so each is a few microseconds of the daemon's thread, where a thread-pool call is
 * a round trip that waits behind the daemon's other work (a pause of one agent while 1,000 others
 * started took up to 200 ms that way, in `bench/density.ts`).
 */
export function createCgroupFreezer(kind: CgroupKind, dir: string): Freezer {
  const v2 = kind === "cgroup-v2";
  const file = (name: string) => join(dir, name);
  const read = (name: string): string | undefined => {
    try {
      return readFileSync(file(name), "utf8").trim();
    } catch (err) {
      if (isRemoved(err)) return undefined;
      throw err;
    }
  };
  const requestState = (frozen: boolean) =>
    v2
      ? writeFileSync(file("cgroup.freeze"), frozen ? "1" : "0")
      : writeFileSync(file("freezer.state"), frozen ? "FROZEN" : "THAWED");
  // v2 reports completion in cgroup.events; v1 shows FREEZING until every task is frozen.
  const reached = (frozen: boolean) =>
    v2
      ? new RegExp(`^frozen ${frozen ? 1 : 0}$`, "m").test(read("cgroup.events") ?? "")
      : read("freezer.state") === (frozen ? "FROZEN" : "THAWED");
  const settle = async (frozen: boolean, signal: AbortSignal) => {
    requestState(frozen);
    // Freezing takes the kernel a moment (each task stops at its next return to user space): the
    // first looks come soon after, then every 10 ms.
    await pollUntil(() => (reached(frozen) ? true : undefined), {
      timeoutMs: FREEZER_DEADLINE_MS,
      firstIntervalMs: 1,
      intervalMs: 10,
      signal,
      what: `cgroup ${dir} to be ${frozen ? "frozen" : "thawed"}`,
    });
  };
  const members = async (): Promise<number[]> => {
    const pids = (read("cgroup.procs") ?? "").split("\n").filter(Boolean).map(Number);
    return pids
      .map(readProcSync)
      .filter(isAliveProc)
      .map((e) => e.pid);
  };

  return {
    kind,
    async prepareLaunch() {
      await mkdir(dir, { recursive: true });
      // A cgroup left frozen (a crash mid-freeze) would freeze the new harness before it listens.
      requestState(false);
      return [file("cgroup.procs")];
    },
    members,
    async isFrozen() {
      return v2 ? read("cgroup.freeze") === "1" : (read("freezer.state") ?? "THAWED") !== "THAWED";
    },
    freeze: (signal) => settle(true, signal),
    thaw: (signal) => settle(false, signal),
    async killAll(signal) {
      if (!existsSync(dir)) return;
      // v1 holds a frozen task's SIGKILL until it is thawed; v2 can kill the whole cgroup at once.
      requestState(false);
      if (v2 && existsSync(file("cgroup.kill"))) writeFileSync(file("cgroup.kill"), "1");
      await pollUntil(
        async () => {
          const pids = await members();
          for (const pid of pids) signalPid(pid, "SIGKILL");
          return pids.length === 0 ? true : undefined;
        },
        { timeoutMs: FREEZER_DEADLINE_MS, intervalMs: 10, signal, what: `every process of ${dir} to die` },
      );
    },
    release: () => removeCgroup(dir),
  };
}

/** Remove an emptied cgroup; rmdir fails with EBUSY until the kernel has let go of the last exited member. */
export async function removeCgroup(dir: string): Promise<void> {
  await pollUntil(
    async () => {
      try {
        await rmdir(dir);
        return true;
      } catch (err) {
        if (isRemoved(err)) return true;
        if ((err as NodeJS.ErrnoException).code === "EBUSY") return undefined;
        throw err;
      }
    },
    { timeoutMs: FREEZER_DEADLINE_MS, what: `cgroup ${dir} to be removable` },
  );
}
