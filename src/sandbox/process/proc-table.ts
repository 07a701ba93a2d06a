import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";

/** One line of the kernel's process table, from `/proc/<pid>/stat`. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** `R`, `S`, `D`, `T` (stopped), `Z` (zombie)... */
  state: string;
  /** Clock ticks after boot when it started: with the pid, names this process and no later one. */
  startTime: string;
}

export async function readProc(pid: number): Promise<ProcEntry | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return procEntry(pid, stat);
}

/** `readProc` in one turn of the event loop: /proc is answered from memory (see cgroup-freezer.ts). */
export function readProcSync(pid: number): ProcEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return procEntry(pid, stat);
}

function procEntry(pid: number, stat: string): ProcEntry {
  // The command name is in parentheses and may itself contain spaces or parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    pid,
    state: fields[0] ?? "?",
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    startTime: fields[19] ?? "",
  };
}

export async function listProcs(): Promise<ProcEntry[]> {
  const names = await readdir("/proc");
  const entries = await Promise.all(names.filter((n) => /^\d+$/.test(n)).map((n) => readProc(Number(n))));
  return entries.filter((e): e is ProcEntry => e !== undefined);
}

/** A zombie has finished; only its parent's wait is missing. */
export function isAliveProc(entry: ProcEntry | undefined): entry is ProcEntry {
  return entry !== undefined && entry.state !== "Z" && entry.state !== "X" && entry.state !== "x";
}

export function isStopped(entry: ProcEntry): boolean {
  return entry.state === "T" || entry.state === "t";
}

/** Whether the process was started with `entry` (`NAME=value`) in its environment. */
export async function hasEnvEntry(pid: number, entry: string): Promise<boolean> {
  try {
    const environ = await readFile(`/proc/${pid}/environ`, "latin1");
    return environ.startsWith(`${entry}\0`) || environ.includes(`\0${entry}\0`);
  } catch {
    return false;
  }
}

/** Send a signal, ignoring a process that is already gone. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}
