import { accessSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxLimits } from "../runtime.ts";
import { removeCgroup } from "./cgroup-freezer.ts";

/** The controllers that bound a sandbox: processes, memory (with swap) and CPU time. */
export const LIMIT_CONTROLLERS = ["pids", "memory", "cpu"] as const;
export type LimitController = (typeof LIMIT_CONTROLLERS)[number];

/** Where one controller's sandbox cgroups are made: `<hierarchy>/swarmd`, v2 or v1. */
export interface ControllerHome {
  controller: LimitController;
  version: 1 | 2;
  base: string;
}

/** v1 needs memory+swap accounting to forbid swap; v2 has `memory.swap.max`. */
const V1_SWAP_FILE = "memory.memsw.limit_in_bytes";
const CPU_PERIOD_US = 100_000;

/**
 * Where each limit controller can be used by this process, from the mount table: a v2 hierarchy
 * that offers the controller (its `swarmd/` child then gets it in `subtree_control`) wins over a
 * v1 hierarchy of its own (hybrid machines mount pids, memory and cpu as v1 and only the freezer,
 * if anything, on v2). Returns the controllers it found writable; the caller decides what is enough.
 */
export function detectLimitControllers(mountinfo = readMountinfo()): ControllerHome[] {
  const homes: ControllerHome[] = [];
  for (const controller of LIMIT_CONTROLLERS) {
    const home = v2Home(controller, mountinfo) ?? v1Home(controller, mountinfo);
    if (home) homes.push(home);
  }
  return homes;
}

function readMountinfo(): string {
  try {
    return readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return "";
  }
}

/** Mount points of cgroup file systems: `[mountPoint, fsType, superOptions]`. */
function cgroupMounts(mountinfo: string): Array<{ point: string; v2: boolean; options: string[] }> {
  return mountinfo
    .split("\n")
    .map((line) => {
      const [left, right] = line.split(" - ");
      if (!left || !right) return undefined;
      const point = left.split(" ")[4];
      const [type, , superOptions] = right.split(" ");
      if (!point || (type !== "cgroup" && type !== "cgroup2")) return undefined;
      return { point: point.replace(/\\040/g, " "), v2: type === "cgroup2", options: (superOptions ?? "").split(",") };
    })
    .filter((m): m is { point: string; v2: boolean; options: string[] } => m !== undefined);
}

function v2Home(controller: LimitController, mountinfo: string): ControllerHome | undefined {
  for (const mount of cgroupMounts(mountinfo).filter((m) => m.v2)) {
    const offered = readWords(join(mount.point, "cgroup.controllers"));
    if (!offered.includes(controller)) continue;
    const base = join(mount.point, "swarmd");
    try {
      mkdirSync(base, { recursive: true });
      // Controllers reach a child only through each parent's subtree_control.
      if (!readWords(join(mount.point, "cgroup.subtree_control")).includes(controller))
        writeFileSync(join(mount.point, "cgroup.subtree_control"), `+${controller}`);
      if (!readWords(join(base, "cgroup.subtree_control")).includes(controller))
        writeFileSync(join(base, "cgroup.subtree_control"), `+${controller}`);
      return { controller, version: 2, base };
    } catch {}
  }
  return undefined;
}

function v1Home(controller: LimitController, mountinfo: string): ControllerHome | undefined {
  for (const mount of cgroupMounts(mountinfo).filter((m) => !m.v2 && m.options.includes(controller))) {
    const base = join(mount.point, "swarmd");
    try {
      mkdirSync(base, { recursive: true });
      if (controller === "memory" && !existsSync(join(base, V1_SWAP_FILE))) continue; // swap could not be bounded
      accessSync(join(base, "cgroup.procs"), constants.W_OK);
      return { controller, version: 1, base };
    } catch {}
  }
  return undefined;
}

function readWords(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/** One of a sandbox's limit cgroups: which controller it bounds, and where. */
export interface LimitCgroup {
  controller: LimitController;
  version: 1 | 2;
  dir: string;
}

/** The limit cgroups a sandbox gets (v2 controllers share one folder). */
export function limitCgroupsFor(homes: readonly ControllerHome[], sandboxId: string): LimitCgroup[] {
  return homes.map((h) => ({ controller: h.controller, version: h.version, dir: join(h.base, sandboxId) }));
}

/** The files to write for each controller, in the order the kernel accepts them. */
function limitFiles(cgroup: LimitCgroup, limits: SandboxLimits): Array<[string, string]> {
  const memory = limits.memoryMiB * 1024 * 1024;
  const quota = Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US));
  switch (cgroup.controller) {
    case "pids":
      return [["pids.max", String(limits.pids)]];
    case "memory":
      // v1 refuses a memsw limit below the memory limit, so the memory limit goes first.
      return cgroup.version === 2
        ? [
            ["memory.max", String(memory)],
            ["memory.swap.max", "0"],
          ]
        : [
            ["memory.limit_in_bytes", String(memory)],
            [V1_SWAP_FILE, String(memory)],
          ];
    case "cpu":
      return cgroup.version === 2
        ? [["cpu.max", `${quota} ${CPU_PERIOD_US}`]]
        : [
            ["cpu.cfs_period_us", String(CPU_PERIOD_US)],
            ["cpu.cfs_quota_us", String(quota)],
          ];
  }
}

/**
 * Make the sandbox's limit cgroups and write its limits into them. Returns the `cgroup.procs`
 * files the harness's launch joins before it execs (launch-shell.ts): every process it ever starts
 * is then bounded.
 */
export async function applyLimits(cgroups: readonly LimitCgroup[], limits: SandboxLimits): Promise<string[]> {
  for (const cgroup of cgroups) {
    await mkdir(cgroup.dir, { recursive: true });
    for (const [file, value] of limitFiles(cgroup, limits)) await writeFile(join(cgroup.dir, file), value);
  }
  return [...new Set(cgroups.map((c) => join(c.dir, "cgroup.procs")))];
}

/** The kernel's count of OOM kills and refused forks for the sandbox (what a limit stopped). */
export function limitEvents(cgroups: readonly LimitCgroup[]): { oomKills: number; forksRefused: number } {
  let oomKills = 0;
  let forksRefused = 0;
  for (const dir of new Set(cgroups.map((c) => c.dir))) {
    const events = readKeyValues(join(dir, "memory.events"));
    oomKills += events.oom_kill ?? 0;
    const oomControl = readKeyValues(join(dir, "memory.oom_control"));
    oomKills += oomControl.oom_kill ?? 0;
    forksRefused += readKeyValues(join(dir, "pids.events")).max ?? 0;
  }
  return { oomKills, forksRefused };
}

function readKeyValues(path: string): Record<string, number> {
  try {
    return Object.fromEntries(
      readFileSync(path, "utf8")
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter((p) => p.length === 2)
        .map(([k, v]) => [k, Number(v)]),
    );
  } catch {
    return {};
  }
}

/** Remove the sandbox's limit cgroups once its processes are dead. */
export async function releaseLimits(cgroups: readonly LimitCgroup[]): Promise<void> {
  for (const dir of new Set(cgroups.map((c) => c.dir))) await removeCgroup(dir);
}
