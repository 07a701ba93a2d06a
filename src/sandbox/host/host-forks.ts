import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, chown, lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { errorMessage, isSwarmError, SwarmError } from "../../errors.ts";
import { FORK_FILES, type ForkNote } from "../../harness/fork-session.ts";
import { copyTree } from "../copy-tree.ts";
import type { ForkSource } from "../runtime.ts";
import { MAX_SESSION_BYTES, type TreeRef, type WorkTree } from "../work-tree.ts";
import type { FileOwner } from "./host-apply.ts";
import { hostTree } from "./host-tree.ts";
import { mountOverlay, unmount } from "./overlay.ts";

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
   * `MAX_SESSION_BYTES`). Idempotent; a half-made one is made again.
   */
  async snapshot(from: HostSandbox, baseId: string, runId: string, signal: AbortSignal): Promise<void> {
    const dir = this.#baseDir(baseId);
    if (existsSync(join(dir, "base.json"))) return;
    await rm(dir, { recursive: true, force: true });
    await mkdir(join(dir, "work"), { recursive: true, mode: 0o700 });
    try {
      const copied = stat(from.work).then((s) => s.mode & 0o7777);
      await copyTree(from.work, join(dir, "work"), signal);
      await writeFile(join(dir, "work-mode"), String(await copied));
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
  }

  /**
   * A fork child's /work at `child.work` (an existing, empty folder of `owners.agent`) from its
   * fork point, and its fork files (the conversation and which copy it is) in its control folder
   * for its harness, owned by `owners.harness`.
   */
  async makeChild(
    fork: ForkSource,
    child: HostSandbox & { sandboxId: string },
    owners: { agent?: FileOwner; harness?: FileOwner },
    signal: AbortSignal,
  ): Promise<void> {
    const base = await this.#base(fork.baseId);
    const layer = this.#layerDir(child.sandboxId);
    await rm(layer, { recursive: true, force: true });
    await mkdir(layer, { recursive: true, mode: 0o700 });
    const lower = join(this.#baseDir(fork.baseId), "work");
    const mode = (await this.#mountChild(lower, layer, child.work, owners.agent, signal)) ? "overlay" : "copy";
    if (mode === "copy") await copyTree(lower, child.work, signal);
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
    if (base.session) {
      const session = await readFile(join(this.#baseDir(fork.baseId), "session.jsonl"));
      await writeFile(join(forkDir, FORK_FILES.session), session, { mode: 0o600 });
    }
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
    if (!record) {
      // A half-made child (killed between its mount and its record) may still be mounted.
      if (existsSync(join(layer, "upper"))) await unmount(work);
      return;
    }
    if (record.mode === "overlay") await unmount(work);
    else if (existsSync(work) && !existsSync(join(layer, "kept"))) await rename(work, join(layer, "kept"));
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
      const layer = this.#layerDir(id);
      const record = await readLayer(layer);
      if (record && record.runId !== runId) continue;
      if (!record && !(await isOld(layer))) continue; // being made right now
      for (const name of await listDir(layer)) if (name.startsWith("view-")) await unmount(join(layer, name));
      await rm(layer, { recursive: true, force: true });
    }
    for (const id of await listDir(this.#bases)) {
      const dir = this.#baseDir(id);
      const record = await readJson(join(dir, "base.json"), BaseRecord);
      if (record ? record.runId === runId : await isOld(dir)) await rm(dir, { recursive: true, force: true });
    }
  }

  /** Try an overlay mount for a fork child's /work; false (copy it instead) where the host allows none. */
  async #mountChild(
    lower: string,
    layer: string,
    target: string,
    agent: FileOwner | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (this.#overlay === false) return false;
    const upper = join(layer, "upper");
    const scratch = join(layer, "scratch");
    await mkdir(upper, { mode: 0o755 });
    await mkdir(scratch, { mode: 0o700 });
    // The merged /work's own folder is the upper layer's: the agent's, with the fork point's mode.
    const mode = Number(await readFile(join(lower, "..", "work-mode"), "utf8").catch(() => "493"));
    await chmod(upper, mode & 0o777);
    if (agent) await chown(upper, agent.uid, agent.gid);
    try {
      await mountOverlay(target, { lower: [lower], upper, scratch }, signal);
      this.#overlay = true;
      return true;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      await rm(upper, { recursive: true, force: true });
      await rm(scratch, { recursive: true, force: true });
      if (this.#overlay === undefined)
        this.log(
          `fork children's /work are copies of their fork point, not overlay layers on it: the overlay mount failed (${errorMessage(err)})`,
        );
      this.#overlay = false;
      return false;
    }
  }

  async #base(baseId: string): Promise<z.infer<typeof BaseRecord>> {
    const record = ID.test(baseId) ? await readJson(join(this.#baseDir(baseId), "base.json"), BaseRecord) : undefined;
    if (!record) throw new SwarmError("SANDBOX_NOT_FOUND", `fork point ${baseId} does not exist`);
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
