import { type CommandRunner, execCommand } from "./command.ts";

/** One sandbox the watch measures: the host folders that count against its quota. */
export interface WatchedSandbox {
  sandboxId: string;
  dirs: string[];
  limitBytes: number;
}

export interface DiskWatchOptions {
  /** The sandboxes whose harness runs now. */
  list(): Promise<WatchedSandbox[]>;
  /** Stop a sandbox over its quota; `reason` is what its agent's end says. */
  stop(sandboxId: string, reason: string): Promise<void>;
  log(message: string): void;
  /** Pause between two rounds. Default 2 s. */
  intervalMs?: number;
  /**
   * How `du` is run. Default: started by the daemon itself, which forks its whole process for each
   * (20-40 ms of its thread at 1,000 agents); the process runtime passes its launcher's.
   */
  run?: CommandRunner;
}

export interface DiskWatch {
  /** Measure every sandbox once now (tests, and a round right after a start). */
  check(): Promise<void>;
  close(): void;
}

/**
 * The disk quota of sandboxes on a file system without project quotas (ext4 here): a watch that
 * measures each sandbox's folders with `du` (blocks really used, so `fallocate` counts, and files,
 * so a flood of empty ones counts too) every round and stops a sandbox over its quota. Between
 * two rounds a sandbox may overshoot by what it writes in that time; RLIMIT_FSIZE bounds each
 * single file to the quota. Rounds never overlap, and the timer never keeps the process alive.
 */
export function startDiskWatch(options: DiskWatchOptions): DiskWatch {
  const intervalMs = options.intervalMs ?? 2_000;
  const run = options.run ?? execCommand;
  let closed = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const round = async () => {
    const sandboxes = await options.list().catch(() => []);
    // Two `du` walks per round for all sandboxes, not two per sandbox: each process started from a
    // busy daemon costs its thread ~10 ms, which a burst of starts cannot spare.
    for (let from = 0; from < sandboxes.length && !closed; from += DIRS_PER_DU) {
      const batch = sandboxes.slice(from, from + DIRS_PER_DU);
      const dirs = batch.flatMap((sandbox) => sandbox.dirs);
      const [used, files] = await Promise.all([
        usedBytes(dirs, run).catch(() => undefined),
        usedInodes(dirs, run).catch(() => undefined),
      ]);
      for (const sandbox of batch) {
        if (closed) return;
        const sumOf = (sizes: Map<string, number> | undefined) =>
          sizes
            ? sandbox.dirs.reduce<number | undefined>(
                (total, dir) => (sizes.has(dir) ? (total ?? 0) + sizes.get(dir)! : total),
                undefined,
              )
            : undefined;
        const bytes = sumOf(used);
        const count = sumOf(files);
        const fileLimit = inodeLimit(sandbox.limitBytes);
        let reason: string;
        if (bytes !== undefined && bytes > sandbox.limitBytes)
          reason = `its sandbox went over its disk limit: ${mib(bytes)} MiB used of ${mib(sandbox.limitBytes)} MiB`;
        else if (count !== undefined && count > fileLimit)
          reason = `its sandbox went over its file limit: ${count} files and folders of ${fileLimit}`;
        else continue;
        options.log(`sandbox ${sandbox.sandboxId}: ${reason}; stopping it`);
        await options
          .stop(sandbox.sandboxId, reason)
          .catch((err: unknown) => options.log(`could not stop sandbox ${sandbox.sandboxId}: ${String(err)}`));
      }
    }
  };
  const check = () => {
    running ??= round().finally(() => {
      running = undefined;
    });
    return running;
  };
  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => void check().finally(schedule), intervalMs);
    timer.unref();
  };
  schedule();

  return {
    check,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}

const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));

/**
 * The files and folders a sandbox may hold: 64 per MiB of its quota, at least 16,384. Empty files
 * take no blocks, but each takes an inode of the host's file system, which the ledger needs too.
 */
export function inodeLimit(limitBytes: number): number {
  return Math.max(16_384, Math.floor((limitBytes / (1024 * 1024)) * 64));
}

/** Folders measured by one `du` (its command line stays far below the kernel's limit). */
const DIRS_PER_DU = 256;

/** Blocks used under all of `dirs` together, in bytes, as the watch counts them (`du -s -x`). */
export async function measuredBytes(dirs: string[]): Promise<number> {
  const sizes = await usedBytes(dirs, execCommand);
  return dirs.reduce((sum, dir) => sum + (sizes.get(dir) ?? 0), 0);
}

/** Blocks used under each of `dirs`, in bytes, as `du` counts them (one file system, links once). */
const usedBytes = (dirs: string[], run: CommandRunner) => duEach(["-B1", "--", ...dirs], run);
/** Files and folders under each of `dirs` (inodes, links once). */
const usedInodes = (dirs: string[], run: CommandRunner) => duEach(["--inodes", "--", ...dirs], run);

/** `du -s` of each folder named: its total by the path as given (NUL-ended lines, so any path reads back). */
async function duEach(args: string[], run: CommandRunner): Promise<Map<string, number>> {
  const { stdout, error } = await run({
    file: "du",
    args: ["-s", "-x", "-0", ...args],
    timeoutMs: 60_000,
    maxBytes: 16 * 1024 * 1024,
  });
  // du exits 1 when a file vanished mid-walk; its totals still count what it saw.
  const sizes = new Map<string, number>();
  for (const entry of stdout.split("\0")) {
    const match = /^(\d+)\t(.*)$/s.exec(entry);
    if (match?.[1] !== undefined && match[2] !== undefined) sizes.set(match[2], Number(match[1]));
  }
  if (sizes.size > 0) return sizes;
  throw error ?? new Error(`du printed no totals: ${stdout.slice(0, 200)}`);
}
