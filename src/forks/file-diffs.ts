import { createTwoFilesPatch } from "diff";
import type { FileChange } from "../api/forks.ts";
import { MAX_DIFF_BYTES, MAX_DIFF_BYTES_PER_FILE } from "../api/limits.ts";
import type { WorkTree } from "../sandbox/work-tree.ts";
import type { TreeChange } from "./tree-compare.ts";

/** Text files this size or smaller (each side) are diffed; larger ones are listed without. */
const MAX_DIFFED_FILE_BYTES = 1024 * 1024;
/** How long one file's diff may take before it is given up (a pathological pair of files). */
const DIFF_TIMEOUT_MS = 1_000;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The changes as `GET /agents/:agentId/changes` lists them: each with its sizes, a link's target,
 * and a unified diff of a text file (`a/` is the fork point, `b/` the agent's /work), at most
 * `MAX_DIFF_BYTES_PER_FILE` per file and `MAX_DIFF_BYTES` in all; a file without one says why.
 */
export async function describeChanges(
  changes: readonly TreeChange[],
  base: WorkTree,
  tree: WorkTree,
  signal: AbortSignal,
): Promise<{ files: FileChange[]; diffBytes: number }> {
  const files: FileChange[] = [];
  let diffBytes = 0;
  for (const change of changes) {
    const now = change.after;
    const was = change.before;
    const entry = (now ?? was)!;
    const file: FileChange = {
      path: change.path,
      change: change.change,
      kind: entry.kind,
      size: now ? now.size : null,
      baseSize: was ? was.size : null,
    };
    if (now?.linkTarget !== undefined) file.linkTarget = now.linkTarget;
    const textual = (!now || now.kind === "file") && (!was || was.kind === "file");
    if (now?.kind === "file" || was?.kind === "file") {
      const diff = textual ? await diffOf(change, base, tree, signal) : { noDiff: "not a file on both sides" };
      if ("diff" in diff) {
        const bytes = Buffer.byteLength(diff.diff);
        if (bytes > MAX_DIFF_BYTES_PER_FILE) file.noDiff = `its diff is larger than ${MAX_DIFF_BYTES_PER_FILE} bytes`;
        else if (diffBytes + bytes > MAX_DIFF_BYTES)
          file.noDiff = `over the ${MAX_DIFF_BYTES} bytes of diff one answer holds`;
        else {
          file.diff = diff.diff;
          diffBytes += bytes;
        }
      } else file.noDiff = diff.noDiff;
    }
    files.push(file);
  }
  return { files, diffBytes };
}

async function diffOf(
  change: TreeChange,
  base: WorkTree,
  tree: WorkTree,
  signal: AbortSignal,
): Promise<{ diff: string } | { noDiff: string }> {
  const sides = [change.before, change.after];
  if (sides.some((side) => side?.unsupported)) return { noDiff: (change.after ?? change.before)?.unsupported ?? "" };
  if (sides.some((side) => side && side.size > MAX_DIFFED_FILE_BYTES))
    return { noDiff: `larger than ${MAX_DIFFED_FILE_BYTES} bytes` };
  let old: string;
  let now: string;
  try {
    [old, now] = await Promise.all([
      change.before ? textOf(await base.read(change.path, MAX_DIFFED_FILE_BYTES, signal)) : "",
      change.after ? textOf(await tree.read(change.path, MAX_DIFFED_FILE_BYTES, signal)) : "",
    ]);
  } catch (err) {
    if (err instanceof BinaryFile) return { noDiff: "binary" };
    return { noDiff: `not readable: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  const diff = createTwoFilesPatch(
    change.before ? `a/${change.path}` : "/dev/null",
    change.after ? `b/${change.path}` : "/dev/null",
    old,
    now,
    undefined,
    undefined,
    { timeout: DIFF_TIMEOUT_MS },
  );
  if (diff === undefined) return { noDiff: "too different to diff in time" };
  // Drop jsdiff's "Index:" and "===" lines: the file names follow in the usual ---/+++ header.
  return { diff: diff.slice(diff.indexOf("---")) };
}

class BinaryFile extends Error {}

/** The file as text: valid UTF-8 with no NUL byte, or `BinaryFile`. */
function textOf(bytes: Buffer): string {
  if (bytes.includes(0)) throw new BinaryFile();
  try {
    return utf8.decode(bytes);
  } catch {
    throw new BinaryFile();
  }
}
