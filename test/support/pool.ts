/** What the tests of the process runtime's pool look at: the harnesses waiting in a pool, and whether a pid lives. */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { layoutAt, poolDir } from "../../src/sandbox/process/sandbox-layout.ts";
import { readRecord } from "../../src/sandbox/process/sandbox-record.ts";

/** Harness pids of the sandboxes waiting in the pool of `dataDir` (none when it has no pool folder). */
export async function pooledPids(dataDir: string): Promise<number[]> {
  const dir = poolDir(dataDir);
  const names = existsSync(dir) ? readdirSync(dir) : [];
  const records = await Promise.all(names.map((name) => readRecord(layoutAt(join(dir, name)))));
  return records.flatMap((r) => (r?.harness ? [r.harness.pid] : []));
}

/** The process `pid` exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
