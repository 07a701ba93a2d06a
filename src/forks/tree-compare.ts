import type { TreeEntry, WorkTree } from "../sandbox/work-tree.ts";

/** One entry that differs between a fork point and a tree: what it was (`before`) and what it is (`after`). */
export interface TreeChange {
  path: string;
  change: "added" | "modified" | "deleted";
  before?: TreeEntry;
  after?: TreeEntry;
}

/** Files this size or smaller are compared by content when their size matches and their time does not. */
const MAX_COMPARED_BYTES = 64 * 1024 * 1024;

/**
 * What differs between `base` (a fork point) and `tree`, by path. A folder differs only when it
 * came or went (or became something else); a file when its size, mode or content differs (a file
 * whose size and modification time both match is taken as unchanged, as rsync and make do; one
 * whose time alone differs is compared byte for byte, up to 64 MiB); a link when its target does.
 */
export async function compareTrees(base: WorkTree, tree: WorkTree, signal: AbortSignal): Promise<TreeChange[]> {
  const [before, after] = await Promise.all([base.entries(signal), tree.entries(signal)]);
  return diffEntries(before, after, (entry) => sameContent(base, tree, entry, signal));
}

/** `compareTrees` over listed entries; `sameFile` decides files whose size matches but time does not. */
export async function diffEntries(
  before: readonly TreeEntry[],
  after: readonly TreeEntry[],
  sameFile: (path: string) => Promise<boolean>,
): Promise<TreeChange[]> {
  const was = new Map(before.map((entry) => [entry.path, entry]));
  const is = new Map(after.map((entry) => [entry.path, entry]));
  const changes: TreeChange[] = [];
  for (const entry of after) {
    const old = was.get(entry.path);
    if (!old) changes.push({ path: entry.path, change: "added", after: entry });
    else if (!(await sameEntry(old, entry, sameFile)))
      changes.push({ path: entry.path, change: "modified", before: old, after: entry });
  }
  for (const entry of before)
    if (!is.has(entry.path)) changes.push({ path: entry.path, change: "deleted", before: entry });
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Whether two entries at one path are the same (see `compareTrees`). */
export async function sameEntry(
  a: TreeEntry,
  b: TreeEntry,
  sameFile: (path: string) => Promise<boolean>,
): Promise<boolean> {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case "dir":
      return true;
    case "symlink":
      return a.linkTarget === b.linkTarget;
    case "other":
      return a.mode === b.mode && a.mtimeMs === b.mtimeMs;
    case "file":
      if (a.size !== b.size || a.mode !== b.mode) return false;
      if (a.mtimeMs === b.mtimeMs) return true;
      return a.size <= MAX_COMPARED_BYTES && !a.unsupported && !b.unsupported && sameFile(a.path);
  }
}

/** Byte-for-byte, read from both trees; a file either cannot read is taken as changed. */
async function sameContent(a: WorkTree, b: WorkTree, path: string, signal: AbortSignal): Promise<boolean> {
  try {
    const [x, y] = await Promise.all([
      a.read(path, MAX_COMPARED_BYTES, signal),
      b.read(path, MAX_COMPARED_BYTES, signal),
    ]);
    return x.equals(y);
  } catch {
    return false;
  }
}
