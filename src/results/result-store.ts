import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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
  };
}
