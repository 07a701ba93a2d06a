import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SwarmError } from "../errors.ts";

/**
 * The service's own copy of every agent's result (`<dataDir>/results/<agentId>/result.md`), so
 * results outlive sandboxes. Written synchronously and atomically (temp file + rename) before the
 * `handle_settled` event that announces it, so an announced result is always readable.
 */
export interface ResultStore {
  /** Store the text; returns its `resultRef` (`fs://<agentId>/result.md`). */
  write(agentId: string, text: string): string;
  /** The stored text, or null when none was written. */
  read(agentId: string): string | null;
  /** Remove the agent's folder and everything in it (a purged run); idempotent. */
  remove(agentId: string): void;
}

export function resultRef(agentId: string): string {
  return `fs://${agentId}/result.md`;
}

export function createResultStore(dataDir: string): ResultStore {
  const root = join(dataDir, "results");
  return {
    write(agentId, text) {
      const dir = join(root, agentId);
      mkdirSync(dir, { recursive: true });
      const file = join(dir, "result.md");
      writeFileSync(`${file}.tmp`, text);
      renameSync(`${file}.tmp`, file);
      return resultRef(agentId);
    },
    read(agentId) {
      try {
        return readFileSync(join(root, agentId, "result.md"), "utf8");
      } catch {
        return null;
      }
    },
    remove(agentId) {
      // A recursive remove must never be steered outside `root` by a strange id.
      if (!/^[A-Za-z0-9_-]+$/.test(agentId))
        throw new SwarmError("INTERNAL", `not an agent id: ${JSON.stringify(agentId)}`);
      rmSync(join(root, agentId), { recursive: true, force: true });
    },
  };
}
