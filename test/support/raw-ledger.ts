import { Level } from "level";

/**
 * Every key of a closed ledger folder as LevelDB holds it, sublevel prefix included
 * (`!ev!<runId>!<seq>`, `!ix!agent!<agentId>`, `!meta!run!<runId>`): what a purge must leave
 * nothing of, seen below the ledger's own API, which hides a dropped run.
 */
export async function rawLedgerKeys(path: string): Promise<string[]> {
  const db = new Level<string, string>(path);
  try {
    return await db.keys().all();
  } finally {
    await db.close();
  }
}

/** The keys that name any of `ids` (a run id, its agents' ids). */
export const keysNaming = (keys: readonly string[], ids: readonly string[]) =>
  keys.filter((key) => ids.some((id) => key.includes(id)));
