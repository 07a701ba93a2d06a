import { readdir, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, SwarmError } from "../errors.ts";

/**
 * Free space a reopen needs beyond the write-ahead logs it replays into a table: a new log, a new
 * manifest and LevelDB's own info log.
 */
const REOPEN_MARGIN_BYTES = 1024 * 1024;

/** Whether a failed write failed for want of space (classic-level reports `IO error: <file>: No space left on device`). */
export function isNoSpace(cause: unknown): boolean {
  for (let err = cause; err instanceof Error; err = err.cause) {
    const { code } = err as { code?: unknown };
    if (code === "ENOSPC" || code === "EDQUOT") return true;
    if (/No space left on device|Disk quota exceeded/i.test(err.message)) return true;
  }
  return false;
}

/** What a write gets while the storage is at fault: `STORAGE_FULL` naming the data folder, else `INTERNAL`. */
export function storageError(cause: unknown, dataDir: string): SwarmError {
  if (!isNoSpace(cause)) return new SwarmError("INTERNAL", "ledger batch failed", { cause });
  return new SwarmError(
    "STORAGE_FULL",
    `the data folder ${dataDir} is full (${errorMessage(cause).replace(/^.*: /, "").toLowerCase()}): nothing was written; free space there and swarmd takes writes again on its own`,
    { cause },
  );
}

/**
 * Whether the file system of the LevelDB folder `path` has room to reopen it: at least the size of
 * its write-ahead logs (replayed into a table on open) and a margin. An open that runs out of room
 * leaves the database closed, so it is not tried without it. When the space cannot be read: yes.
 */
export async function roomToReopen(path: string): Promise<boolean> {
  try {
    const [fs, names] = await Promise.all([statfs(path), readdir(path)]);
    let logs = 0;
    for (const name of names) if (name.endsWith(".log")) logs += (await stat(join(path, name))).size;
    return fs.bavail * fs.bsize >= logs + REOPEN_MARGIN_BYTES;
  } catch {
    return true;
  }
}

/**
 * Reads share the database; a reopen needs it alone. A reopen waits for the reads under way, and
 * reads that come meanwhile wait for it (closing the database would end their iterators).
 */
export class ReadGate {
  #reads = 0;
  #idle: (() => void) | undefined;
  #reopening: Promise<void> | undefined;

  async read<T>(work: () => Promise<T>): Promise<T> {
    while (this.#reopening) await this.#reopening;
    this.#reads += 1;
    try {
      return await work();
    } finally {
      this.#reads -= 1;
      if (this.#reads === 0) this.#idle?.();
    }
  }

  async alone(work: () => Promise<void>): Promise<void> {
    let resolve = () => {};
    this.#reopening = new Promise<void>((done) => (resolve = done));
    try {
      while (this.#reads > 0) await new Promise<void>((done) => (this.#idle = done));
      await work();
    } finally {
      this.#idle = undefined;
      this.#reopening = undefined;
      resolve();
    }
  }
}
