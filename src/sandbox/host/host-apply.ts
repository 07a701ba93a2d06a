import { chmod, chown, lchown, lstat, mkdir, rm, symlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SwarmError } from "../../errors.ts";
import { type FileOwner, replaceFile } from "../replace-file.ts";
import { isPlainRelativePath, type WorkChange } from "../work-tree.ts";

/**
 * Apply changes to a host folder an agent owns (its `/work`), in order. The caller has the
 * sandbox frozen, so nothing but this moves in the folder meanwhile; still every step checks
 * before it acts: no folder of a path may be a link (a write never goes through one, `ELOOP`
 * otherwise), a file is written to a new name beside its place and renamed over it (so a hard
 * link to the old one is never written through), and modes never keep set-id bits. New entries
 * belong to `owner`.
 */
export async function applyHostChanges(
  root: string,
  changes: readonly WorkChange[],
  owner: FileOwner | undefined,
  signal: AbortSignal,
): Promise<void> {
  for (const change of changes)
    if (!isPlainRelativePath(change.path)) throw new SwarmError("INVALID_BODY", `not a plain path: ${change.path}`);
  // Deletions, folders and links in order; then files, a few at once (each is its own path, and
  // the folders they need are made by then or made by whichever file comes first).
  for (const change of changes) if (change.kind !== "file") await applyOne(root, change, owner, signal);
  const files = changes.filter((change) => change.kind === "file");
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(FILES_AT_ONCE, files.length) }, async () => {
      for (let i = next++; i < files.length; i = next++) await applyOne(root, files[i]!, owner, signal);
    }),
  );
}

/** Files written at once. */
const FILES_AT_ONCE = 8;

/** One change, checked before it acts. */
async function applyOne(
  root: string,
  change: WorkChange,
  owner: FileOwner | undefined,
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  const full = join(root, change.path);
  if (change.kind === "delete") {
    if (!(await folderPathIsReal(root, change.path))) return; // under a link or gone: nothing of ours there
    await rm(full, { recursive: true, force: true });
    return;
  }
  await makeFolders(root, dirname(change.path), owner);
  const now = await lstat(full).catch(() => undefined);
  switch (change.kind) {
    case "dir":
      if (now?.isDirectory()) {
        await chmod(full, change.mode & 0o777);
        break;
      }
      if (now) await rm(full, { recursive: true, force: true });
      await mkdir(full, { mode: change.mode & 0o777 });
      await chmod(full, change.mode & 0o777);
      if (owner) await chown(full, owner.uid, owner.gid);
      break;
    case "symlink":
      if (now) await rm(full, { recursive: true, force: true });
      await symlink(change.target, full);
      if (owner) await lchown(full, owner.uid, owner.gid);
      break;
    case "file": {
      if (now && !now.isFile()) await rm(full, { recursive: true, force: true });
      await replaceFile(full, change.content, change.mode, owner);
      break;
    }
  }
}

/** Make the folders of `path` below `root` that are missing; every one that is there must be a real folder. */
async function makeFolders(root: string, path: string, owner: FileOwner | undefined): Promise<void> {
  if (path === "." || path === "") return;
  let at = root;
  for (const segment of path.split("/")) {
    at = join(at, segment);
    const stat = await lstat(at).catch(() => undefined);
    if (stat?.isDirectory()) continue;
    if (stat) throw linkInPath(path);
    try {
      await mkdir(at, { mode: 0o755 });
    } catch (err) {
      // Made meanwhile by another file's write into the same folder.
      if ((err as NodeJS.ErrnoException).code === "EEXIST" && (await lstat(at)).isDirectory()) continue;
      throw err;
    }
    if (owner) await chown(at, owner.uid, owner.gid);
  }
}

/** Whether every folder of `path` below `root` is a real folder (none a link, none missing). */
async function folderPathIsReal(root: string, path: string): Promise<boolean> {
  const segments = path.split("/").slice(0, -1);
  let at = root;
  for (const segment of segments) {
    at = join(at, segment);
    const stat = await lstat(at).catch(() => undefined);
    if (!stat?.isDirectory()) return false;
  }
  return true;
}

function linkInPath(path: string): NodeJS.ErrnoException {
  return Object.assign(
    new Error(`a folder of ${path} is not a folder (a link or a file): nothing is written through it`),
    {
      code: "ELOOP",
    },
  );
}
