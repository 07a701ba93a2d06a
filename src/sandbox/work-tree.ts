import { SwarmError } from "../errors.ts";

/**
 * Reading and writing an agent's `/work` from outside its sandbox: what compare-and-adopt of forks
 * needs of a runtime (`SandboxRuntime.openTree`, `applyChanges`). Every path is relative to `/work`,
 * `/`-separated, with no `.` or `..` segment and no leading slash. Files an agent wrote are hostile:
 * no link is ever followed, a FIFO never blocks a reader, and every read is bounded.
 */

/** What one entry of a tree is, as `lstat` tells (a link is a link, never what it points to). */
export type EntryKind = "file" | "dir" | "symlink" | "other";

export interface TreeEntry {
  /** Relative to `/work`, `/`-separated. */
  path: string;
  kind: EntryKind;
  /** Bytes of a file; the target's length for a link; 0 otherwise. */
  size: number;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
  /** Last modification, in ms (sub-ms precision where the file system has it). */
  mtimeMs: number;
  /** A link's target, as stored (never resolved). */
  linkTarget?: string;
  /** Why the entry can be listed but not read or adopted (a name that is not UTF-8, say). */
  unsupported?: string;
}

/** A read-only view of one `/work`: a fork point's frozen copy, or an agent's (live, or kept after it ended). */
export interface WorkTree {
  /** Every entry below the root, folders before what they hold. Never follows a link. */
  entries(signal: AbortSignal): Promise<TreeEntry[]>;
  /**
   * The bytes of the regular file at `path`, never through a link (an entry swapped for a link,
   * a FIFO or a device meanwhile is refused: `ELOOP` / `ENOTREG`), at most `maxBytes` (`EFBIG`).
   */
  read(path: string, maxBytes: number, signal: AbortSignal): Promise<Buffer>;
  /** Release what opening it took (a mount, a helper container). Idempotent. */
  close(): Promise<void>;
}

/** Which tree to open: a fork point (`base`), or a sandbox's `/work` (also after its sandbox closed, for a fork child). */
export type TreeRef = { baseId: string } | { sandboxId: string };

/** One change to apply to a `/work`: a file written whole, a link made, a folder made, or an entry removed. */
export type WorkChange =
  | { path: string; kind: "file"; content: Buffer; mode: number }
  | { path: string; kind: "symlink"; target: string }
  | { path: string; kind: "dir"; mode: number }
  | { path: string; kind: "delete" };

/** The largest size a sandbox's conversation (pi's session file) may have to be forked. */
export const MAX_SESSION_BYTES = 64 * 1024 * 1024;

/** Whether `path` is a relative path of plain segments (no empty, `.` or `..` segment, no NUL). */
export function isPlainRelativePath(path: string): boolean {
  if (path === "" || path.startsWith("/") || path.includes("\0")) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

/** Changes that would take a `/work` over its disk limit: refused before anything is written. */
export function overDiskLimit(sandboxId: string, bytes: number, limitBytes: number): SwarmError {
  const mib = (n: number) => Math.ceil(n / (1024 * 1024));
  return new SwarmError(
    "DISK_LIMIT",
    `the changes would take /work of sandbox ${sandboxId} to ${mib(bytes)} MiB, over its disk limit of ${mib(limitBytes)} MiB; nothing was applied`,
  );
}

/** Bytes the file writes among `changes` add at most (what a disk limit is checked against). */
export const bytesWritten = (changes: readonly WorkChange[]): number =>
  changes.reduce((sum, change) => sum + (change.kind === "file" ? change.content.length : 0), 0);
