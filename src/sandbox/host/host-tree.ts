import { constants } from "node:fs";
import { lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { join } from "node:path";
import { SwarmError } from "../../errors.ts";
import type { EntryKind, TreeEntry, WorkTree } from "../work-tree.ts";

/** The most entries one tree lists: a `/work` holds at most 64 per MiB of its disk limit (disk-watch.ts). */
export const MAX_TREE_ENTRIES = 1_000_000;

const FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A host folder an agent wrote (its `/work`, a fork point, a fork child's kept changes) as a
 * `WorkTree`. The walk never follows a link (`lstat`, and no descent into one) and keeps names as
 * bytes: one that is not UTF-8 is listed `unsupported` and not descended into. A read opens with
 * `O_NOFOLLOW | O_NONBLOCK` (no link, no FIFO that blocks), takes only a regular file, and checks
 * through `/proc/self/fd` that the file opened is the one named below the root: a folder of the
 * path swapped for a link meanwhile is refused (`ELOOP`), never read through.
 */
export function hostTree(root: string, release: () => Promise<void> = async () => undefined): WorkTree {
  let realRoot: Promise<string> | undefined;
  let closed = false;
  return {
    async entries(signal) {
      const entries: TreeEntry[] = [];
      const pending: { dir: Buffer; rel: string }[] = [{ dir: Buffer.from(root), rel: "" }];
      for (let next = pending.pop(); next; next = pending.pop()) {
        signal.throwIfAborted();
        let names: Buffer[];
        try {
          names = await readdir(next.dir, { encoding: "buffer" });
        } catch (err) {
          // A folder that went away or that the walk may not open is listed without its contents.
          if (isGone(err)) continue;
          throw err;
        }
        names.sort(Buffer.compare);
        const dirs: { dir: Buffer; rel: string }[] = [];
        for (const name of names) {
          if (entries.length >= MAX_TREE_ENTRIES)
            throw new SwarmError(
              "TREE_TOO_LARGE",
              `${root} holds more than ${MAX_TREE_ENTRIES} entries: too many to compare`,
            );
          const full = Buffer.concat([next.dir, Buffer.from("/"), name]);
          const text = decode(name);
          const path = next.rel === "" ? (text ?? lossy(name)) : `${next.rel}/${text ?? lossy(name)}`;
          let stat: Awaited<ReturnType<typeof lstat>>;
          try {
            stat = await lstat(full);
          } catch (err) {
            if (isGone(err)) continue;
            throw err;
          }
          const kind: EntryKind = stat.isSymbolicLink()
            ? "symlink"
            : stat.isDirectory()
              ? "dir"
              : stat.isFile()
                ? "file"
                : "other";
          const entry: TreeEntry = {
            path,
            kind,
            size: kind === "file" || kind === "symlink" ? stat.size : 0,
            mode: stat.mode & 0o7777,
            mtimeMs: stat.mtimeMs,
          };
          if (text === undefined) {
            entry.unsupported = "its name is not UTF-8";
            entries.push(entry);
            continue;
          }
          if (kind === "symlink") {
            const target = decode(await readlink(full, { encoding: "buffer" }).catch(() => Buffer.alloc(0)));
            if (target === undefined) entry.unsupported = "its link target is not UTF-8";
            else entry.linkTarget = target;
          }
          entries.push(entry);
          if (kind === "dir") dirs.push({ dir: full, rel: path });
        }
        // Depth first, in name order: a folder comes right before what it holds.
        for (let i = dirs.length - 1; i >= 0; i--) pending.push(dirs[i]!);
      }
      return entries;
    },

    async read(path, maxBytes, signal) {
      signal.throwIfAborted();
      if (closed) throw new Error("the tree was closed");
      realRoot ??= realpath(root);
      const expected = join(await realRoot, path);
      const handle = await open(join(root, path), FLAGS);
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) throw errno("ENOTREG", `${path} is not a regular file`);
        if (stat.size > maxBytes) throw errno("EFBIG", `${path} is ${stat.size} bytes, more than ${maxBytes}`);
        const opened = await readlink(`/proc/self/fd/${handle.fd}`);
        if (opened !== expected) throw errno("ELOOP", `${path} is reached through a link`);
        const buffer = Buffer.allocUnsafe(stat.size);
        let done = 0;
        while (done < stat.size) {
          const { bytesRead } = await handle.read(buffer, done, stat.size - done, done);
          if (bytesRead === 0) break;
          done += bytesRead;
        }
        return buffer.subarray(0, done);
      } finally {
        await handle.close();
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      await release();
    },
  };
}

const decode = (bytes: Buffer): string | undefined => {
  if (bytes.includes(0)) return undefined;
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
};
const lossy = (bytes: Buffer) => bytes.toString("utf8");

function isGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "EACCES" || code === "ELOOP";
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}
