import type { InMemoryFs } from "just-bash";
import type { EntryKind, TreeEntry, WorkChange, WorkTree } from "../work-tree.ts";
import { WORK_DIR } from "./sandbox-files.ts";

/** `/work` of an in-memory file system as a `WorkTree` (nothing to release). */
export function memoryTree(files: InMemoryFs): WorkTree {
  return {
    async entries(signal) {
      const entries: TreeEntry[] = [];
      const paths = files
        .getAllPaths()
        .filter((path) => path.startsWith(`${WORK_DIR}/`))
        .sort();
      for (const path of paths) {
        signal.throwIfAborted();
        const stat = await files.lstat(path);
        const kind: EntryKind = stat.isSymbolicLink
          ? "symlink"
          : stat.isDirectory
            ? "dir"
            : stat.isFile
              ? "file"
              : "other";
        const entry: TreeEntry = {
          path: path.slice(WORK_DIR.length + 1),
          kind,
          size: kind === "file" ? stat.size : 0,
          mode: stat.mode & 0o7777,
          mtimeMs: stat.mtime.getTime(),
        };
        if (kind === "symlink") {
          entry.linkTarget = await files.readlink(path);
          entry.size = Buffer.byteLength(entry.linkTarget);
        }
        entries.push(entry);
      }
      return entries;
    },
    async read(path, maxBytes, signal) {
      signal.throwIfAborted();
      const full = `${WORK_DIR}/${path}`;
      const stat = await files.lstat(full).catch(() => {
        throw errno("ENOENT", `${path} does not exist`);
      });
      if (stat.isSymbolicLink) throw errno("ELOOP", `${path} is a link`);
      if (!stat.isFile) throw errno("ENOTREG", `${path} is not a regular file`);
      if (stat.size > maxBytes) throw errno("EFBIG", `${path} is ${stat.size} bytes, more than ${maxBytes}`);
      return Buffer.from(await files.readFileBuffer(full));
    },
    async close() {},
  };
}

/** Bytes of the files under `/work` (what a disk limit counts here). */
export async function workBytes(files: InMemoryFs): Promise<number> {
  let total = 0;
  for (const path of files.getAllPaths()) {
    if (!path.startsWith(`${WORK_DIR}/`)) continue;
    const stat = await files.lstat(path);
    if (stat.isFile) total += stat.size;
  }
  return total;
}

/** Apply changes to `/work` in order: the in-memory file system has no links to be led through. */
export async function applyMemoryChanges(files: InMemoryFs, changes: readonly WorkChange[]): Promise<void> {
  for (const change of changes) {
    const full = `${WORK_DIR}/${change.path}`;
    const parent = full.slice(0, full.lastIndexOf("/"));
    switch (change.kind) {
      case "delete":
        await files.rm(full, { recursive: true, force: true });
        break;
      case "dir":
        files.mkdirSync(full, { recursive: true });
        await files.chmod(full, change.mode & 0o777);
        break;
      case "symlink":
        files.mkdirSync(parent, { recursive: true });
        await files.rm(full, { recursive: true, force: true });
        await files.symlink(change.target, full);
        break;
      case "file":
        files.mkdirSync(parent, { recursive: true });
        await files.rm(full, { recursive: true, force: true });
        files.writeFileSync(full, change.content, undefined, { mode: change.mode & 0o777 });
        break;
    }
  }
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}
