import { execFile } from "node:child_process";

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
  let closed = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const round = async () => {
    for (const sandbox of await options.list().catch(() => [])) {
      if (closed) return;
      const [used, files] = await Promise.all([usedBytes(sandbox.dirs).catch(() => undefined), usedInodes(sandbox.dirs).catch(() => undefined)]);
      const fileLimit = inodeLimit(sandbox.limitBytes);
      let reason: string;
      if (used !== undefined && used > sandbox.limitBytes) reason = `its sandbox went over its disk limit: ${mib(used)} MiB used of ${mib(sandbox.limitBytes)} MiB`;
      else if (files !== undefined && files > fileLimit) reason = `its sandbox went over its file limit: ${files} files and folders of ${fileLimit}`;
      else continue;
      options.log(`sandbox ${sandbox.sandboxId}: ${reason}; stopping it`);
      await options.stop(sandbox.sandboxId, reason).catch((err: unknown) => options.log(`could not stop sandbox ${sandbox.sandboxId}: ${String(err)}`));
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

/** Blocks used under `dirs`, in bytes, as `du` counts them (one file system, links once). */
const usedBytes = (dirs: string[]) => duTotal(["-B1", "--", ...dirs]);
/** Files and folders under `dirs` (inodes, links once). */
const usedInodes = (dirs: string[]) => duTotal(["--inodes", "--", ...dirs]);

function duTotal(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile("du", ["-s", "-x", "-c", ...args], { timeout: 60_000, maxBuffer: 1024 * 1024 }, (err, stdout) => {
      // du exits 1 when a file vanished mid-walk; its total still counts what it saw.
      const total = /^(\d+)\s+total$/m.exec(stdout);
      if (total?.[1]) resolve(Number(total[1]));
      else reject(err ?? new Error(`du printed no total: ${stdout.slice(0, 200)}`));
    });
  });
}
