import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type AgentSpec, AgentSpecSchema } from "../spec/agent-spec.ts";
import { formatIssues } from "../validation.ts";
import { SpecStoreError } from "./client-errors.ts";

/** A saved agent spec as listed. */
export interface SavedSpec {
  /** The name it is saved under (the file `<name>.json`). */
  name: string;
  spec: AgentSpec;
  file: string;
  savedAt: number;
}

/**
 * The local cache of saved agent specs shared by the bridge's `swarm_spec_*` tools and
 * `swarm specs`: one `<name>.json` per spec in one folder. Local only: the service never sees it;
 * a saved spec is sent inline when a run or spawn names it. Every method throws `SpecStoreError`
 * with a message fit for a user (invalid name, invalid spec, no such spec).
 */
export interface SpecStore {
  readonly dir: string;
  /** Validates and saves (replacing a spec of that name unless `overwrite` is false). */
  add(spec: unknown, options?: { name?: string; overwrite?: boolean }): SavedSpec & { replaced: boolean };
  /** Saved specs sorted by name; unreadable files are reported, not fatal. */
  list(): { specs: SavedSpec[]; problems: string[] };
  get(name: string): AgentSpec;
  /** Idempotent: returns whether a spec was there. */
  remove(name: string): boolean;
}

/**
 * `SWARM_SPECS_DIR`, else `$XDG_CONFIG_HOME/swarmd/specs`, else `~/.config/swarmd/specs`: the
 * user's config folder, so saved specs follow the user rather than a checkout or a data folder.
 */
export function specsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SWARM_SPECS_DIR) return env.SWARM_SPECS_DIR;
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "swarmd", "specs");
}

/** No leading dot: names become file names, and `.`/`..`/hidden files must not be reachable. */
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

export function createSpecStore(dir: string = specsDir()): SpecStore {
  const fileOf = (name: string) => join(dir, `${checkName(name)}.json`);

  const read = (name: string): SavedSpec => {
    const file = fileOf(name);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new SpecStoreError(`No saved spec named "${name}" in ${dir}.`);
    }
    return { name, spec: validate(parseJson(text, file), file), file, savedAt: statSync(file).mtimeMs };
  };

  return {
    dir,
    add(spec, options = {}) {
      const valid = validate(spec, "spec");
      const name = checkName(options.name ?? valid.name);
      const file = fileOf(name);
      const replaced = exists(file);
      if (replaced && options.overwrite === false)
        throw new SpecStoreError(`A spec named "${name}" is already saved (${file}).`);
      mkdirSync(dir, { recursive: true });
      // Write then rename: a reader never sees half a file.
      const temp = join(dir, `.${name}.${process.pid}.tmp`);
      writeFileSync(temp, `${JSON.stringify(valid, null, 2)}\n`);
      renameSync(temp, file);
      return { name, spec: valid, file, savedAt: statSync(file).mtimeMs, replaced };
    },
    list() {
      let files: string[];
      try {
        files = readdirSync(dir).filter((f) => f.endsWith(".json") && NAME.test(f.slice(0, -5)));
      } catch {
        return { specs: [], problems: [] };
      }
      const specs: SavedSpec[] = [];
      const problems: string[] = [];
      for (const f of files.sort()) {
        try {
          specs.push(read(f.slice(0, -5)));
        } catch (err) {
          problems.push(err instanceof Error ? err.message : String(err));
        }
      }
      return { specs, problems };
    },
    get: (name) => read(name).spec,
    remove(name) {
      const file = fileOf(name);
      const was = exists(file);
      rmSync(file, { force: true });
      return was;
    },
  };
}

function checkName(name: string): string {
  if (!NAME.test(name))
    throw new SpecStoreError(
      `Spec name ${JSON.stringify(name)} is not valid: use 1..64 characters of [A-Za-z0-9._-], not starting with ".".`,
    );
  return name;
}

function validate(spec: unknown, where: string): AgentSpec {
  const parsed = AgentSpecSchema.safeParse(spec);
  if (!parsed.success) throw new SpecStoreError(`Not a valid agent spec: ${formatIssues(where, parsed.error.issues)}`);
  return parsed.data;
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SpecStoreError(`${file} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}
