import { readdir, readFile } from "node:fs/promises";
import { listProcs } from "../src/sandbox/process/proc-table.ts";
import { SANDBOX_TAG_VAR } from "../src/sandbox/process/sandbox-tag.ts";

/** Memory of one process, from /proc. */
export interface ProcMemory {
  pid: number;
  name: string;
  /** `VmRSS` of /proc/<pid>/status, bytes. */
  rss: number;
  /** `Pss` of /proc/<pid>/smaps_rollup, bytes: shared pages divided among their sharers. */
  pss: number;
}

const kib = (text: string, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) * 1024;

export async function procMemory(pid: number): Promise<ProcMemory | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
    return {
      pid,
      name: /^Name:\s+(.*)$/m.exec(status)?.[1] ?? "?",
      rss: kib(status, "VmRSS"),
      pss: kib(rollup, "Pss"),
    };
  } catch {
    return undefined; // exited meanwhile
  }
}

async function pids(): Promise<number[]> {
  return (await readdir("/proc")).filter((n) => /^\d+$/.test(n)).map(Number);
}

/** Every process carrying `SWARMD_SANDBOX=<id>` for one of `sandboxIds` (the runtime tags them all). */
export async function sandboxProcesses(sandboxIds: ReadonlySet<string>): Promise<ProcMemory[]> {
  const prefix = `${SANDBOX_TAG_VAR}=`;
  const found = await Promise.all(
    (await pids()).map(async (pid) => {
      const environ = await readFile(`/proc/${pid}/environ`, "latin1").catch(() => "");
      const tag = environ.split("\0").find((entry) => entry.startsWith(prefix));
      return tag !== undefined && sandboxIds.has(tag.slice(prefix.length)) ? procMemory(pid) : undefined;
    }),
  );
  return found.filter((p): p is ProcMemory => p !== undefined);
}

/** `pid` and all its descendants. */
export async function processTree(pid: number): Promise<ProcMemory[]> {
  const parents = new Map((await listProcs()).map((e) => [e.pid, e.ppid]));
  const inTree = (p: number): boolean => p === pid || (p > 1 && parents.has(p) && inTree(parents.get(p) ?? 0));
  const tree = await Promise.all([...parents.keys()].filter(inTree).map(procMemory));
  return tree.filter((p): p is ProcMemory => p !== undefined);
}

/** The kernel's estimate of memory available for new work, bytes. */
export async function memAvailable(): Promise<number> {
  return kib(await readFile("/proc/meminfo", "utf8"), "MemAvailable");
}

export const sum = (procs: readonly ProcMemory[], field: "rss" | "pss") =>
  procs.reduce((total, p) => total + p[field], 0);
