import type Docker from "dockerode";
import { type Headers, pack } from "tar-stream";
import { SwarmError } from "../../errors.ts";
import { SANDBOX_USER } from "../docker/container-options.ts";
import { bytesWritten, isPlainRelativePath, overDiskLimit, type WorkChange } from "../work-tree.ts";
import { type PathKind, statPath } from "./archive-tree.ts";
import { HELPER_LABEL, HELPER_RUN_MS, quick, runHelper, withHelper, within } from "./node-helpers.ts";
import { VOLUME_TARGETS } from "./sandbox-service.ts";

const ROOT = VOLUME_TARGETS.work;
/** The helper's list of paths to delete (NUL-separated), put into its own layer before each run. */
const DELETE_LIST = "swarmd-delete";
/**
 * The apply helper's one command: delete what its list names (`rm -rf`, which removes a link
 * itself, never what it points to), or with no list, say how much /work holds (KiB).
 */
const APPLY_SCRIPT = `if [ -s /${DELETE_LIST} ]; then exec xargs -0 -r rm -rf -- < /${DELETE_LIST}; else exec du -sk ${ROOT}; fi`;

/** One run of the changes: deletions (one `rm` run), or writes (one archive). */
type Step = { kind: "delete"; paths: string[] } | { kind: "write"; entries: WorkChange[] };

export interface ApplyTarget {
  docker: Docker;
  /** The sandbox's `-work` volume on that node. */
  volume: string;
  image: string;
  labels: Record<string, string>;
  sandboxId: string;
  limitBytes: number;
  log: (message: string) => void;
}

/**
 * Apply changes to a sandbox's /work volume, its sandbox frozen by the caller (nothing else moves
 * in it meanwhile), through one helper container on its node that mounts only that volume:
 *
 * - First how much /work holds (`du`): changes that would take it over `limitBytes` are refused
 *   (`DISK_LIMIT`) before anything is written.
 * - Then every change is checked before any is made, as the folders will be when its turn comes:
 *   each folder of a path must be a folder (one missing is made, the agent's, 0755), never a link
 *   or a file (`ELOOP`, nothing applied); a deletion under a link or a missing folder does nothing.
 * - Writes go in as one archive per run of them (files and folders the agent's, 65532, modes
 *   without set-id bits; links as given), put at the helper's root with entries named `work/...`
 *   so that a link may point anywhere, as on the other runtimes. The engine replaces an entry by
 *   unlinking it first, so a hard link to an old file is never written through.
 * - Deletions run `rm -rf` in the helper as root with the file capabilities only (to remove what
 *   the agent made unwritable to itself, as the other runtimes' root does), seeing nothing but the
 *   volume. An exec in the sandbox would not run while it is frozen.
 */
export async function applyArchiveChanges(
  target: ApplyTarget,
  changes: readonly WorkChange[],
  signal: AbortSignal,
): Promise<void> {
  for (const change of changes) {
    if (!isPlainRelativePath(change.path)) throw new SwarmError("INVALID_BODY", `not a plain path: ${change.path}`);
    if (change.kind === "symlink" && (change.target === "" || change.target.includes("\0")))
      throw new SwarmError("INVALID_BODY", `not a link target: ${JSON.stringify(change.target)}`);
  }
  await withHelper(
    target.docker,
    {
      image: target.image,
      cmd: ["/bin/sh", "-c", APPLY_SCRIPT],
      binds: [`${target.volume}:${ROOT}:nocopy`],
      labels: { ...target.labels, [HELPER_LABEL]: "apply" },
      capAdd: ["DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER"],
      writableRoot: true,
    },
    target.log,
    async (helper) => {
      const measured = await runHelper(helper, signal);
      const kib = Number.parseInt(measured.output, 10);
      if (measured.code !== 0 || !Number.isFinite(kib))
        throw new Error(`measuring /work failed (exit ${measured.code}): ${measured.output.slice(0, 300)}`);
      const bytes = kib * 1024 + bytesWritten(changes);
      if (bytes > target.limitBytes) throw overDiskLimit(target.sandboxId, bytes, target.limitBytes);
      const steps = await planSteps(helper, changes);
      for (const step of steps) {
        signal.throwIfAborted();
        if (step.kind === "write") {
          await helper.putArchive(archiveOf(step.entries), { path: "/", abortSignal: within(signal, HELPER_RUN_MS) });
          continue;
        }
        const list = `${step.paths.map((path) => `${ROOT}/${path}`).join("\0")}\0`;
        await helper.putArchive(archiveOf([], { name: DELETE_LIST, content: list }), {
          path: "/",
          abortSignal: quick(),
        });
        const { code, output } = await runHelper(helper, signal);
        if (code !== 0) throw new Error(`deleting in /work failed (exit ${code}): ${output.slice(0, 300)}`);
      }
    },
  );
}

/**
 * The steps that make `changes`, with the folders each write needs, checked against /work as it
 * will be when the change's turn comes: what earlier changes made (`made`), and for the rest what
 * the engine's stat says now (asked once per path).
 */
async function planSteps(helper: Docker.Container, changes: readonly WorkChange[]): Promise<Step[]> {
  /** What a path is (or will be) after the changes planned so far. */
  const made = new Map<string, PathKind>();
  /** Folders made afresh by the plan: what /work held below them is gone. */
  const fresh = new Set<string>();
  const kindOf = async (path: string): Promise<PathKind> => {
    for (const folder of foldersOf(path)) {
      const kind = made.get(folder);
      if (kind !== undefined && kind !== "dir") return "missing";
      if (fresh.has(folder)) return made.get(path) ?? "missing";
    }
    const known = made.get(path);
    if (known !== undefined) return known;
    const now = await statPath(helper, `${ROOT}/${path}`);
    made.set(path, now);
    return now;
  };
  /** `path` is now `kind`; whatever was below it before is gone unless it stays the folder it was. */
  const become = (path: string, kind: PathKind, was: PathKind) => {
    if (was === "dir" && kind === "dir") return;
    for (const key of [...made.keys()]) if (key.startsWith(`${path}/`)) made.delete(key);
    for (const folder of [...fresh]) if (folder.startsWith(`${path}/`)) fresh.delete(folder);
    made.set(path, kind);
    if (kind === "dir") fresh.add(path);
    else fresh.delete(path);
  };

  const steps: Step[] = [];
  const deletes = (): string[] => {
    const last = steps.at(-1);
    if (last?.kind === "delete") return last.paths;
    const next: Step = { kind: "delete", paths: [] };
    steps.push(next);
    return next.paths;
  };
  const writes = (): WorkChange[] => {
    const last = steps.at(-1);
    if (last?.kind === "write") return last.entries;
    const next: Step = { kind: "write", entries: [] };
    steps.push(next);
    return next.entries;
  };
  for (const change of changes) {
    if (change.kind === "delete") {
      let real = true;
      for (const folder of foldersOf(change.path)) if ((await kindOf(folder)) !== "dir") real = false;
      const was = real ? await kindOf(change.path) : "missing";
      if (!real || was === "missing") continue; // under a link, or gone: nothing of ours there
      deletes().push(change.path);
      become(change.path, "missing", was);
      continue;
    }
    const batch = writes();
    for (const folder of foldersOf(change.path)) {
      const kind = await kindOf(folder);
      if (kind === "dir") continue;
      if (kind !== "missing")
        throw Object.assign(
          new Error(`a folder of ${change.path} is not a folder (a link or a file): nothing is written through it`),
          { code: "ELOOP" },
        );
      batch.push({ path: folder, kind: "dir", mode: 0o755 });
      become(folder, "dir", "missing");
    }
    const was = await kindOf(change.path);
    batch.push(change);
    become(change.path, change.kind === "dir" ? "dir" : change.kind === "file" ? "file" : "symlink", was);
  }
  return steps;
}

/** The folders of a path, outermost first (`a/b/c` → `a`, `a/b`). */
function foldersOf(path: string): string[] {
  const segments = path.split("/");
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join("/"));
}

/** File type bits: tar-stream takes a mode of 0 for none given (and writes 0644); only the low 12 bits are written. */
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

/** An archive of writes below `work/` (and an extra file at the root, the helper's own). */
function archiveOf(writes: readonly WorkChange[], extra?: { name: string; content: string }): NodeJS.ReadableStream {
  const tar = pack();
  const mtime = new Date();
  const owner = { uid: SANDBOX_USER.uid, gid: SANDBOX_USER.gid, mtime };
  const name = (path: string) => `${ROOT.slice(1)}/${path}`;
  for (const change of writes) {
    const header: Headers = { ...owner, name: name(change.path) };
    switch (change.kind) {
      case "dir":
        tar.entry({ ...header, type: "directory", mode: S_IFDIR | (change.mode & 0o777) });
        break;
      case "file":
        tar.entry(
          { ...header, type: "file", mode: S_IFREG | (change.mode & 0o777), size: change.content.length },
          change.content,
        );
        break;
      case "symlink":
        tar.entry({ ...header, type: "symlink", mode: 0o777, linkname: change.target });
        break;
      case "delete":
        break;
    }
  }
  if (extra) tar.entry({ name: extra.name, type: "file", mode: 0o600, uid: 0, gid: 0, mtime }, extra.content);
  tar.finalize();
  return tar;
}
