import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import {
  chmod,
  chown,
  copyFile,
  lstat,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  rmdir,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { errorMessage, isSwarmError, SwarmError } from "../../errors.ts";
import { FORK_FILES, type ForkNote } from "../../harness/fork-session.ts";
import { copyTree } from "../copy-tree.ts";
import type { FileOwner } from "../replace-file.ts";
import type { ForkSource } from "../runtime.ts";
import { MAX_SESSION_BYTES, type TreeRef, type WorkTree } from "../work-tree.ts";
import { hostTree } from "./host-tree.ts";
import { mountOverlay, mountOverlays, unmount } from "./overlay.ts";

/** A fork point's record, written last: a folder without it is half made. */
const BaseRecord = z.object({ v: z.literal(1), runId: z.string(), session: z.boolean() });
/** A fork child's layer: how its /work was made (`overlay` on the fork point, or a `copy` of it). */
const LayerRecord = z.object({
  v: z.literal(1),
  runId: z.string(),
  baseId: z.string(),
  mode: z.enum(["overlay", "copy"]),
});
type LayerRecord = z.infer<typeof LayerRecord>;

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The host folders of a sandbox that a fork reads and writes. */
export interface HostSandbox {
  work: string;
  control: string;
}

/**
 * Forks of sandboxes whose `/work` and control folder are host folders (the process and docker
 * runtimes), under `<dataDir>/forks/`:
 *
 * - `bases/<baseId>/`: a fork point, `work/` (a copy of the forked sandbox's /work, made while it
 *   is frozen, never written again) and `session.jsonl` (its conversation), kept until the run is
 *   dropped.
 * - `layers/<sandboxId>/`: a fork child's own part. Where the host can (root, overlayfs), the
 *   child's /work is an overlay mount: the fork point's `work/` as the lower layer, shared by all
 *   its siblings, and `upper/` for what the child writes, so N children cost one copy, not N, and
 *   none sees another's writes. Elsewhere it is a copy of the fork point (`--reflink=auto`). When
 *   its sandbox closes, its changes stay (`upper/`, or the copy moved to `kept/`), to be compared
 *   and adopted until the run is dropped.
 */
export class HostForks {
  readonly #bases: string;
  readonly #layers: string;
  /** Whether an overlay mount worked here (`undefined` until one was tried). */
  #overlay: boolean | undefined;
  readonly #known = new Map<string, z.infer<typeof BaseRecord>>();

  constructor(
    dataDir: string,
    private readonly log: (message: string) => void,
  ) {
    this.#bases = join(dataDir, "forks", "bases");
    this.#layers = join(dataDir, "forks", "layers");
  }

  /**
   * A fork point of a sandbox its caller holds frozen (or whose harness is not running): its /work
   * copied, and the newest session file of its conversation (read safely: a regular file, at most
   * `MAX_SESSION_BYTES`). With `copies`, that many children's overlay layers are made ahead, all
   * mounted by one `mount` run, for `makeChild` to take (one process per fork, not one per child).
   * Idempotent; a half-made one is made again.
   */
  async snapshot(from: HostSandbox, baseId: string, runId: string, signal: AbortSignal, copies = 0): Promise<void> {
    const dir = this.#baseDir(baseId);
    if (existsSync(join(dir, "base.json"))) return;
    await rm(dir, { recursive: true, force: true });
    await mkdir(join(dir, "work"), { recursive: true, mode: 0o700 });
    try {
      await copyTree(from.work, join(dir, "work"), signal);
      const session = await newestSession(join(from.control, "pi", "sessions"), signal);
      if (session) await writeFile(join(dir, "session.jsonl"), session, { mode: 0o600 });
      const record = { v: 1 as const, runId, session: session !== undefined };
      await writeFile(join(dir, "base.json"), JSON.stringify(record), { mode: 0o600 });
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      if (signal.aborted) throw signal.reason;
      if (isSwarmError(err)) throw err;
      throw new SwarmError("SNAPSHOT_FAILED", `fork point ${baseId}: ${errorMessage(err)}`, { cause: err });
    }
    // Layers made ahead are a saving, not a need: a child without one makes its own.
    await this.#prepare(baseId, copies, signal).catch(() => undefined);
  }

  /**
   * A fork child's /work at `child.work` (an existing, empty folder) from its fork point: where
   * overlays work, `child.work` becomes a link to its layer's overlay mount (`layers/<id>/merged`:
   * one made ahead by `snapshot`, or one mounted now), else a copy of the fork point. And its fork
   * files (the conversation and which copy it is) in its control folder for its harness, owned by
   * `owners.harness`.
   */
  async makeChild(
    fork: ForkSource,
    child: HostSandbox & { sandboxId: string },
    owners: { harness?: FileOwner },
    signal: AbortSignal,
  ): Promise<void> {
    const base = await this.#base(fork.baseId);
    const layer = this.#layerDir(child.sandboxId);
    // Made before (a provision cut short by a restart): its mount goes with it.
    if (existsSync(layer)) await unmount(join(layer, "merged"));
    await rm(layer, { recursive: true, force: true });
    const lower = join(this.#baseDir(fork.baseId), "work");
    const ready = join(this.#pendingDir(fork.baseId), String(fork.copy));
    let mode: LayerRecord["mode"] = "copy";
    if (existsSync(join(ready, "upper"))) {
      await rename(ready, layer); // the overlay mounted on `ready/merged` moves with its folder
      mode = "overlay";
    } else {
      await mkdir(layer, { recursive: true, mode: 0o700 });
      if (await this.#mountChild(lower, layer, signal)) mode = "overlay";
    }
    if (mode === "overlay") {
      await rmdir(child.work);
      await symlink(join(layer, "merged"), child.work);
    } else await copyTree(lower, child.work, signal);
    const record: LayerRecord = { v: 1, runId: base.runId, baseId: fork.baseId, mode };
    await writeFile(join(layer, "layer.json"), JSON.stringify(record), { mode: 0o600 });

    const forkDir = join(child.control, FORK_FILES.dir);
    await mkdir(forkDir, { mode: 0o700 });
    const note: ForkNote = {
      copy: fork.copy,
      of: fork.of,
      ...(fork.toolCallId !== undefined ? { toolCallId: fork.toolCallId } : {}),
    };
    await writeFile(join(forkDir, FORK_FILES.note), JSON.stringify(note), { mode: 0o600 });
    if (base.session)
      await copyFile(join(this.#baseDir(fork.baseId), "session.jsonl"), join(forkDir, FORK_FILES.session));
    const harness = owners.harness;
    if (harness)
      for (const path of [forkDir, join(forkDir, FORK_FILES.note), join(forkDir, FORK_FILES.session)])
        if (existsSync(path)) await chown(path, harness.uid, harness.gid);
  }

  /**
   * Before a sandbox's folder is removed (its close, or a provision that failed): a fork child's
   * /work is unmounted (overlay) or moved into its layer (copy), so its changes stay with the run
   * until `dropRun`. Nothing for a sandbox that is no fork child; idempotent.
   */
  async releaseChild(sandboxId: string, work: string): Promise<void> {
    if (!ID.test(sandboxId)) return;
    const layer = this.#layerDir(sandboxId);
    const record = await readLayer(layer);
    // An overlay child (or a half-made one, killed between its mount and its record) is unmounted.
    if (!record || record.mode === "overlay") {
      if (existsSync(join(layer, "merged"))) await unmount(join(layer, "merged"));
      return;
    }
    if (existsSync(work) && !existsSync(join(layer, "kept"))) await rename(work, join(layer, "kept"));
  }

  /** The folders of a fork child whose blocks count against its disk limit: its own layer (overlay) or none (copy: /work itself). */
  ownLayer(sandboxId: string): string | undefined {
    const upper = join(this.#layerDir(sandboxId), "upper");
    return existsSync(upper) ? upper : undefined;
  }

  /**
   * A tree: a fork point, a live sandbox's /work (`liveWork`), or an ended fork child's kept
   * changes over its fork point (a read-only overlay mount of both, made for the read and
   * removed by `close`; or its kept copy). `SANDBOX_NOT_FOUND` when there is none.
   */
  async openTree(ref: TreeRef, liveWork: string | undefined, signal: AbortSignal): Promise<WorkTree> {
    if ("baseId" in ref) {
      await this.#base(ref.baseId);
      return hostTree(join(this.#baseDir(ref.baseId), "work"));
    }
    if (liveWork !== undefined) return hostTree(liveWork);
    const layer = this.#layerDir(ref.sandboxId);
    const record = await readLayer(layer);
    if (!record)
      throw new SwarmError("SANDBOX_NOT_FOUND", `no sandbox ${ref.sandboxId} and no fork child's changes of it`);
    if (record.mode === "copy") return hostTree(join(layer, "kept"));
    const view = join(layer, `view-${randomUUID()}`);
    await mkdir(view, { mode: 0o700 });
    const lower = [join(layer, "upper"), join(this.#baseDir(record.baseId), "work")];
    try {
      await mountOverlay(view, { lower, readOnly: true }, signal);
    } catch (err) {
      await rm(view, { recursive: true, force: true });
      throw new SwarmError("INTERNAL", `reading the changes of ${ref.sandboxId}: ${errorMessage(err)}`, { cause: err });
    }
    return hostTree(view, async () => {
      await unmount(view);
      await rm(view, { recursive: true, force: true });
    });
  }

  /** Remove the run's fork points and kept changes (its sandboxes were closed before). */
  async dropRun(runId: string): Promise<void> {
    for (const id of await listDir(this.#layers)) {
      if (id.startsWith(PENDING)) {
        // Layers made ahead that no child took (a child refused by a budget, say).
        const baseId = id.slice(PENDING.length);
        const base = await readJson(join(this.#baseDir(baseId), "base.json"), BaseRecord);
        if (base ? base.runId !== runId : !(await isOld(join(this.#layers, id)))) continue;
        for (const copy of await listDir(join(this.#layers, id)))
          if (copy !== "mounts") await unmount(join(this.#layers, id, copy, "merged"));
        await rm(join(this.#layers, id), { recursive: true, force: true });
        continue;
      }
      const layer = this.#layerDir(id);
      const record = await readLayer(layer);
      if (record && record.runId !== runId) continue;
      if (!record && !(await isOld(layer))) continue; // being made right now
      for (const name of await listDir(layer))
        if (name.startsWith("view-") || name === "merged") await unmount(join(layer, name));
      await rm(layer, { recursive: true, force: true });
    }
    for (const id of await listDir(this.#bases)) {
      const dir = this.#baseDir(id);
      const record = await readJson(join(dir, "base.json"), BaseRecord);
      if (record ? record.runId === runId : await isOld(dir)) {
        this.#known.delete(id);
        await rm(dir, { recursive: true, force: true });
      }
    }
  }

  /** Try an overlay mount at `<layer>/merged`; false (copy the fork point instead) where the host allows none. */
  async #mountChild(lower: string, layer: string, signal: AbortSignal): Promise<boolean> {
    if (this.#overlay === false) return false;
    await makeLayer(await stat(lower), layer);
    try {
      await mountOverlay(join(layer, "merged"), overlayOf(lower, layer), signal);
      this.#overlay = true;
      return true;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      for (const part of ["upper", "scratch", "merged"]) await rm(join(layer, part), { recursive: true, force: true });
      this.#overlayFailed(err);
      return false;
    }
  }

  /**
   * `copies` children's layers on the fork point, made and mounted at once: one `mount` run for
   * all (`mountOverlays`). A failure leaves none, and each child makes its own (or a copy).
   */
  async #prepare(baseId: string, copies: number, signal: AbortSignal): Promise<void> {
    if (this.#overlay === false || copies < 1) return;
    const lower = join(this.#baseDir(baseId), "work");
    const pending = this.#pendingDir(baseId);
    const layers = Array.from({ length: copies }, (_, i) => join(pending, String(i + 1)));
    try {
      const root = await stat(lower);
      await Promise.all(layers.map((layer) => makeLayer(root, layer)));
      await mountOverlays(
        layers.map((layer) => ({ target: join(layer, "merged"), layers: overlayOf(lower, layer) })),
        join(pending, "mounts"),
        signal,
      );
      this.#overlay = true;
    } catch (err) {
      for (const layer of layers) await unmount(join(layer, "merged")).catch(() => undefined);
      await rm(pending, { recursive: true, force: true });
      if (!signal.aborted) this.#overlayFailed(err);
      throw err;
    }
  }

  #overlayFailed(err: unknown): void {
    if (this.#overlay === undefined)
      this.log(
        `fork children's /work are copies of their fork point, not overlay layers on it: the overlay mount failed (${errorMessage(err)})`,
      );
    this.#overlay = false;
  }

  /** Where `snapshot` makes children's layers ahead. */
  #pendingDir(baseId: string): string {
    return join(this.#layers, `${PENDING}${this.#baseDirName(baseId)}`);
  }

  #baseDirName(baseId: string): string {
    if (!ID.test(baseId)) throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(baseId)} is not a fork point id`);
    return baseId;
  }

  /** A fork point's record (read once: a complete fork point never changes until it is dropped). */
  async #base(baseId: string): Promise<z.infer<typeof BaseRecord>> {
    const known = this.#known.get(baseId);
    if (known && existsSync(join(this.#baseDir(baseId), "base.json"))) return known;
    const record = ID.test(baseId) ? await readJson(join(this.#baseDir(baseId), "base.json"), BaseRecord) : undefined;
    if (!record) throw new SwarmError("SANDBOX_NOT_FOUND", `fork point ${baseId} does not exist`);
    this.#known.set(baseId, record);
    return record;
  }

  #baseDir(baseId: string): string {
    if (!ID.test(baseId)) throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(baseId)} is not a fork point id`);
    return join(this.#bases, baseId);
  }

  #layerDir(sandboxId: string): string {
    if (!ID.test(sandboxId))
      throw new SwarmError("SANDBOX_NOT_FOUND", `${JSON.stringify(sandboxId)} is not a sandbox id`);
    return join(this.#layers, sandboxId);
  }
}

/** The folder name of layers made ahead (`pending-<baseId>`), beside children's layers. */
const PENDING = "pending-";

/**
 * A layer's folders: `upper` (the child's writes; its own folder is the merged /work's, so it gets
 * the fork point's mode and owner: `cp -a` gave the fork point's folder those of the /work it
 * copied), `scratch` (overlay's work folder) and `merged` (the mount point).
 */
async function makeLayer(root: { mode: number; uid: number; gid: number }, layer: string): Promise<void> {
  const upper = join(layer, "upper");
  await mkdir(upper, { recursive: true, mode: root.mode & 0o777 });
  await Promise.all([mkdir(join(layer, "scratch"), { mode: 0o700 }), mkdir(join(layer, "merged"), { mode: 0o755 })]);
  // The umask may have taken bits off the mode, and the daemon owns what it makes.
  if (((await stat(upper)).mode & 0o777) !== (root.mode & 0o777)) await chmod(upper, root.mode & 0o777);
  if (root.uid !== process.getuid?.() || root.gid !== process.getgid?.()) await chown(upper, root.uid, root.gid);
}

const overlayOf = (lower: string, layer: string) => ({
  lower: [lower],
  upper: join(layer, "upper"),
  scratch: join(layer, "scratch"),
});

/** The newest session file of pi's session folder (the one its harness continues), read safely; none when there is none. */
async function newestSession(dir: string, signal: AbortSignal): Promise<Buffer | undefined> {
  const names = (await listDir(dir)).filter((name) => name.endsWith(".jsonl"));
  let newest: { name: string; at: number } | undefined;
  for (const name of names) {
    const info = await lstat(join(dir, name)).catch(() => undefined);
    if (!info?.isFile()) continue;
    if (!newest || info.mtimeMs > newest.at) newest = { name, at: info.mtimeMs };
  }
  if (!newest) return undefined;
  try {
    return await hostTree(dir).read(newest.name, MAX_SESSION_BYTES, signal);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EFBIG")
      throw new SwarmError(
        "SNAPSHOT_FAILED",
        `its conversation (pi's session file) is larger than ${MAX_SESSION_BYTES} bytes, the most a fork copies`,
      );
    throw new SwarmError("SNAPSHOT_FAILED", `its conversation could not be read safely: ${code ?? errorMessage(err)}`);
  }
}

async function readLayer(layer: string): Promise<LayerRecord | undefined> {
  return readJson(join(layer, "layer.json"), LayerRecord);
}

async function readJson<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
  try {
    const parsed = schema.safeParse(JSON.parse(await readFile(path, "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function listDir(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

/** A folder untouched for a minute: a half-made one no call is still making. */
async function isOld(dir: string): Promise<boolean> {
  const info = await stat(dir).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs > 60_000;
}
