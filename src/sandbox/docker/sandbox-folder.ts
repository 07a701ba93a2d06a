import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SwarmError, errorMessage } from "../../errors.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";

/**
 * What the docker runtime keeps on the host about a sandbox, beside its control folder: enough to
 * report a sandbox whose container vanished, and to start its harness after a service restart.
 * Kept outside `control/` because the agent can read `control/` (it is mounted at /control).
 */
export interface SandboxRecord {
  sandboxId: string;
  runId: string;
  agentId: string;
  /** spec.env: given to the harness's exec, never to the container (a commit would copy it). */
  env: Record<string, string>;
  /** The exec running the harness, once started. */
  harnessExecId?: string;
}

const RECORD = "docker-sandbox.json";

/** The host side of `<dataDir>/sandboxes/<sandboxId>/`. */
export interface SandboxFolders {
  controlDir(sandboxId: string): string;
  /** Create the folder, its control folder, spec and record. `SANDBOX_EXISTS` when the folder exists. */
  create(record: SandboxRecord, spec: Record<string, unknown>): Promise<void>;
  read(sandboxId: string): Promise<SandboxRecord | undefined>;
  update(record: SandboxRecord): Promise<void>;
  /** Every sandbox folder with a docker record (folders of other runtimes are not ours). */
  list(): Promise<SandboxRecord[]>;
  remove(sandboxId: string): Promise<void>;
}

export function sandboxFolders(root: string): SandboxFolders {
  const dir = (id: string) => join(root, id);
  const controlDir = (id: string) => join(root, id, "control");
  const write = (record: SandboxRecord) => writeFile(join(dir(record.sandboxId), RECORD), JSON.stringify(record), { mode: 0o600 });
  const read = async (id: string): Promise<SandboxRecord | undefined> => {
    try {
      return JSON.parse(await readFile(join(dir(id), RECORD), "utf8")) as SandboxRecord;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  };

  return {
    controlDir,
    async create(record, spec) {
      try {
        await mkdir(dir(record.sandboxId));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new SwarmError("SANDBOX_EXISTS", `Sandbox ${record.sandboxId} already exists.`);
        throw new SwarmError("SANDBOX_PROVISION_FAILED", `Cannot create the sandbox folder: ${errorMessage(err)}`, { cause: err });
      }
      await mkdir(controlDir(record.sandboxId));
      await writeFile(join(controlDir(record.sandboxId), CONTROL_FILES.spec), JSON.stringify(spec));
      await write(record);
    },
    read,
    update: write,
    async list() {
      const names = await readdir(root).catch(() => [] as string[]);
      const records = await Promise.all(names.map((name) => read(name).catch(() => undefined)));
      return records.filter((r): r is SandboxRecord => r !== undefined);
    },
    async remove(sandboxId) {
      await rm(dir(sandboxId), { recursive: true, force: true });
    },
  };
}
