import { randomUUID } from "node:crypto";
import { chown, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, SwarmError } from "../../errors.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import type { UserNetProcess } from "../network/user-net.ts";
import { isRefusedControlFile, readControlFile } from "../safe-read.ts";
import { HARNESS_USER, SANDBOX_USER } from "./container-options.ts";

/**
 * What the docker runtime keeps on the host about a sandbox, beside its control folder: enough to
 * report a sandbox whose container vanished, and to start its harness after a service restart.
 * Kept outside `control/`, which is mounted at /control (for the harness, whose uid owns it).
 */
export interface SandboxRecord {
  sandboxId: string;
  runId: string;
  agentId: string;
  /** spec.env: given to the harness's exec only, never to the container's own configuration. */
  env: Record<string, string>;
  /** The exec running the harness, once started. */
  harnessExecId?: string;
  /** When its harness was ended by a hibernation (cleared when started again). */
  hibernatedAt?: string;
  /** The slirp4netns of a networked sandbox (stopped on close). */
  userNet?: UserNetProcess;
  /** `/work`'s quota in MiB, for the disk watch (absent in records made before quotas). */
  diskMiB?: number;
  /** Set when the runtime stopped the sandbox for breaking its disk quota: what its agent's end says. */
  stoppedFor?: string;
}

const RECORD = "docker-sandbox.json";
/** Far above any record written here (the spec's env is the only part of any size). */
const MAX_RECORD_BYTES = 4 * 1024 * 1024;

/**
 * The host side of `<dataDir>/sandboxes/<sandboxId>/` (mode 0700, the daemon's): `control/` belongs
 * to the harness's user and `work/` to the agent's (mounted at /control and /work), `inputs/` to the daemon
 * (mounted read-only at /inputs, filled through `staging/`), the record beside them. No container
 * sees the folder itself, the record, or any other sandbox's folders.
 */
export interface SandboxFolders {
  controlDir(sandboxId: string): string;
  workDir(sandboxId: string): string;
  inputsDir(sandboxId: string): string;
  /** Create the folder, its control, work and inputs folders, spec and record. `SANDBOX_EXISTS` when the folder exists. */
  create(record: SandboxRecord, spec: Record<string, unknown>): Promise<void>;
  /** Write input files (names already checked), each renamed into place: a reader sees all of a file or none. */
  writeInputs(sandboxId: string, files: Record<string, string>, signal: AbortSignal): Promise<void>;
  read(sandboxId: string): Promise<SandboxRecord | undefined>;
  update(record: SandboxRecord): Promise<void>;
  /** Every sandbox folder with a docker record (folders of other runtimes are not ours). */
  list(): Promise<SandboxRecord[]>;
  remove(sandboxId: string): Promise<void>;
}

/**
 * `beforeRemove` runs before a sandbox's folder is removed (a fork child's /work is unmounted or
 * kept there).
 */
export function sandboxFolders(
  root: string,
  beforeRemove: (sandboxId: string, workDir: string) => Promise<void> = async () => undefined,
): SandboxFolders {
  const dir = (id: string) => join(root, id);
  const controlDir = (id: string) => join(root, id, "control");
  const workDir = (id: string) => join(root, id, "work");
  const inputsDir = (id: string) => join(root, id, "inputs");
  const stagingDir = (id: string) => join(root, id, "staging");
  /** Hand a path to one of the sandbox's users; only a daemon running as root can. */
  const giveTo = async (path: string, user: { uid: number; gid: number }) => {
    try {
      await chown(path, user.uid, user.gid);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EPERM") throw err;
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `The docker runtime gives each sandbox's folders to uids ${SANDBOX_USER.uid} and ${HARNESS_USER.uid}, which needs the daemon to run as root: ${errorMessage(err)}`,
        { cause: err },
      );
    }
  };
  /** Replaced atomically: a reader (the disk watch, a restarted service) sees the old record or the new one. */
  const write = async (record: SandboxRecord) => {
    const temporary = join(dir(record.sandboxId), `${RECORD}.${randomUUID()}.tmp`);
    await writeFile(temporary, JSON.stringify(record), { mode: 0o600 });
    await rename(temporary, join(dir(record.sandboxId), RECORD));
  };
  const read = async (id: string): Promise<SandboxRecord | undefined> => {
    try {
      return JSON.parse(
        (await readControlFile(join(dir(id), RECORD), MAX_RECORD_BYTES)).toString("utf8"),
      ) as SandboxRecord;
    } catch (err) {
      // A symlink, FIFO or oversized file is not a record this service wrote.
      if ((err as NodeJS.ErrnoException).code === "ENOENT" || isRefusedControlFile(err)) return undefined;
      throw err;
    }
  };

  return {
    controlDir,
    workDir,
    inputsDir,
    async create(record, spec) {
      const id = record.sandboxId;
      try {
        await mkdir(dir(id), { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST")
          throw new SwarmError("SANDBOX_EXISTS", `Sandbox ${id} already exists.`);
        throw new SwarmError("SANDBOX_PROVISION_FAILED", `Cannot create the sandbox folder: ${errorMessage(err)}`, {
          cause: err,
        });
      }
      // The harness binds its socket and writes its log in control/ and reads the spec; the agent cannot.
      await mkdir(controlDir(id), { mode: 0o700 });
      const specFile = join(controlDir(id), CONTROL_FILES.spec);
      await writeFile(specFile, JSON.stringify(spec), { mode: 0o600 });
      for (const path of [controlDir(id), specFile]) await giveTo(path, HARNESS_USER);
      // 0711: the harness starts its agent's tools in /work, so it may enter it, not list it.
      await mkdir(workDir(id), { mode: 0o711 });
      await giveTo(workDir(id), SANDBOX_USER);
      await mkdir(inputsDir(id), { mode: 0o755 });
      await mkdir(stagingDir(id), { mode: 0o700 });
      await write(record);
    },
    async writeInputs(sandboxId, files, signal) {
      for (const [name, content] of Object.entries(files)) {
        signal.throwIfAborted();
        const staged = join(stagingDir(sandboxId), `${randomUUID()}.tmp`);
        await writeFile(staged, content, { encoding: "utf8", mode: 0o644 });
        await rename(staged, join(inputsDir(sandboxId), name));
      }
    },
    read,
    update: write,
    async list() {
      const names = await readdir(root).catch(() => [] as string[]);
      const records = await Promise.all(names.map((name) => read(name).catch(() => undefined)));
      return records.filter((r): r is SandboxRecord => r !== undefined);
    },
    async remove(sandboxId) {
      await beforeRemove(sandboxId, workDir(sandboxId));
      await rm(dir(sandboxId), { recursive: true, force: true });
    },
  };
}
