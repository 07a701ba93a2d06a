import PQueue from "p-queue";
import type { AdoptResponse } from "../api/forks.ts";
import type { TreeEntry, WorkChange, WorkTree } from "../sandbox/work-tree.ts";
import { sameEntry, type TreeChange } from "./tree-compare.ts";

/** The largest file one adopt copies; a larger one is skipped, saying so. */
export const MAX_ADOPTED_FILE_BYTES = 64 * 1024 * 1024;
/** The most bytes one adopt copies in all; what would go over is skipped, saying so. */
export const MAX_ADOPTED_BYTES = 256 * 1024 * 1024;

/** What adopting a child's changes would do to its parent's /work. */
export interface AdoptPlan {
  /** What to apply, in order: deletions deepest first, then folders, files and links parents first. */
  writes: WorkChange[];
  files: AdoptResponse["files"];
  skipped: AdoptResponse["skipped"];
  /** Paths the parent changed too since the fork (in a way other than the child did). */
  conflicts: string[];
}

/**
 * Plan an adopt: the child's changes since the fork point (`changes`, of `theirs` against `base`),
 * each checked against the parent's /work now (`ours`): a path the parent also changed since the
 * fork is a conflict, unless both made the same change; with `theirs` the child's version wins.
 * A FIFO, socket or device, or an entry that cannot be read safely, is skipped with why.
 */
export async function planAdopt(
  changes: readonly TreeChange[],
  trees: { base: WorkTree; theirs: WorkTree; ours: WorkTree },
  signal: AbortSignal,
): Promise<AdoptPlan> {
  const ours = new Map((await trees.ours.entries(signal)).map((entry) => [entry.path, entry]));
  const plan: AdoptPlan = { writes: [], files: [], skipped: [], conflicts: [] };
  const queue = new PQueue({ concurrency: READS_AT_ONCE });
  const reads: Promise<void>[] = [];
  const unread = new Map<Extract<WorkChange, { kind: "file" }>, string>();
  const deletions: WorkChange[] = [];
  const changed = new Map(changes.map((change) => [change.path, change]));
  /** Folders of the child's paths that the parent turned into something else (a link, a file). */
  const blocked = new Set<string>();
  let copied = 0;
  for (const change of changes) {
    for (const folder of foldersOf(change.path)) {
      const mine = ours.get(folder);
      if (!mine || mine.kind === "dir" || blocked.has(folder)) continue;
      // The child's own change of that path replaces it (listed before this one, sorted by path).
      if (changed.get(folder)?.after?.kind === "dir") continue;
      blocked.add(folder);
      plan.conflicts.push(folder);
      deletions.push({ path: folder, kind: "delete" });
      plan.writes.push({ path: folder, kind: "dir", mode: 0o755 });
    }
    const now = change.after;
    const mine = ours.get(change.path);
    if (now?.kind === "other" || change.before?.kind === "other" || mine?.kind === "other") {
      plan.skipped.push({ path: change.path, reason: "a FIFO, socket or device is never copied" });
      continue;
    }
    const unsupported = now?.unsupported ?? change.before?.unsupported;
    if (unsupported !== undefined) {
      plan.skipped.push({ path: change.path, reason: unsupported });
      continue;
    }
    // The parent left the path as it was at the fork, or made the very change the child made.
    const untouched = await same(change.before, mine, (path) => equalFiles(trees.base, trees.ours, path, signal));
    const alike = await same(now, mine, (path) => equalFiles(trees.theirs, trees.ours, path, signal));
    if (alike) continue;
    if (!untouched) plan.conflicts.push(change.path);
    if (!now) {
      deletions.push({ path: change.path, kind: "delete" });
      plan.files.push({ path: change.path, change: change.change });
      continue;
    }
    // A path that was something else in the parent goes first (a file where a folder comes, say).
    if (mine && mine.kind !== now.kind) deletions.push({ path: change.path, kind: "delete" });
    if (now.kind === "dir") plan.writes.push({ path: change.path, kind: "dir", mode: now.mode });
    else if (now.kind === "symlink")
      plan.writes.push({ path: change.path, kind: "symlink", target: now.linkTarget ?? "" });
    else {
      if (now.size > MAX_ADOPTED_FILE_BYTES) {
        plan.skipped.push({ path: change.path, reason: `larger than ${MAX_ADOPTED_FILE_BYTES} bytes` });
        continue;
      }
      if (copied + now.size > MAX_ADOPTED_BYTES) {
        plan.skipped.push({ path: change.path, reason: `over the ${MAX_ADOPTED_BYTES} bytes one adopt copies` });
        continue;
      }
      copied += now.size;
      // Read a few at once; placed in order once all are read.
      const write: Extract<WorkChange, { kind: "file" }> = {
        path: change.path,
        kind: "file",
        content: EMPTY,
        mode: now.mode,
      };
      const listed = { path: change.path, change: change.change };
      reads.push(
        queue.add(async () => {
          try {
            write.content = await trees.theirs.read(change.path, MAX_ADOPTED_FILE_BYTES, signal);
          } catch (err) {
            unread.set(write, `not readable safely: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
          }
        }),
      );
      plan.writes.push(write);
      plan.files.push(listed);
      continue;
    }
    plan.files.push({ path: change.path, change: change.change });
  }
  await Promise.all(reads);
  if (unread.size > 0) {
    const gone = new Set([...unread.keys()].map((write) => write.path));
    plan.writes = plan.writes.filter((write) => !unread.has(write as Extract<WorkChange, { kind: "file" }>));
    plan.files = plan.files.filter((file) => !gone.has(file.path));
    for (const [write, reason] of unread) plan.skipped.push({ path: write.path, reason });
  }
  // Deepest first, so a folder is empty when its turn comes.
  deletions.sort((a, b) => depth(b.path) - depth(a.path));
  plan.writes = [...deletions, ...plan.writes];
  return plan;
}

const EMPTY = Buffer.alloc(0);
/** Files of the child read at once. */
const READS_AT_ONCE = 8;

const depth = (path: string) => path.split("/").length;

/** The folders a path lies in, outermost first (`a/b/c` → `a`, `a/b`). */
const foldersOf = (path: string) => {
  const segments = path.split("/");
  return segments.slice(0, -1).map((_, i) => segments.slice(0, i + 1).join("/"));
};

/** Whether the entry at one path is the same in two trees (both absent counts as the same). */
async function same(
  a: TreeEntry | undefined,
  b: TreeEntry | undefined,
  sameFile: (path: string) => Promise<boolean>,
): Promise<boolean> {
  if (!a || !b) return a === b;
  return sameEntry(a, b, sameFile);
}

async function equalFiles(a: WorkTree, b: WorkTree, path: string, signal: AbortSignal): Promise<boolean> {
  try {
    const [x, y] = await Promise.all([
      a.read(path, MAX_ADOPTED_FILE_BYTES, signal),
      b.read(path, MAX_ADOPTED_FILE_BYTES, signal),
    ]);
    return x.equals(y);
  } catch {
    return false;
  }
}
