/**
 * Key layout of the ledger's sublevels. Event keys are `<runId>!<seq padded to 12>`, so a run's
 * events form one contiguous range that LevelDB's byte order sorts by seq.
 */

const SEQ_WIDTH = 12;
/** The largest seq the padding can hold; a run never gets near it. */
export const MAX_SEQ = 10 ** SEQ_WIDTH - 1;

/** Key of the run marker in the meta sublevel, written with a run's first event. */
export const RUN_META_PREFIX = "run!";

/**
 * A run id may not contain the separator: run `a` would otherwise own the range of run `a!b`.
 */
export function isValidRunId(runId: string): boolean {
  return runId.length > 0 && !runId.includes("!");
}

export function eventKey(runId: string, seq: number): string {
  return `${runId}!${String(seq).padStart(SEQ_WIDTH, "0")}`;
}

/** The seq of an event key (the digits after the last separator). */
export function seqOfKey(key: string): number {
  return Number(key.slice(key.lastIndexOf("!") + 1));
}

export function runMetaKey(runId: string): string {
  return `${RUN_META_PREFIX}${runId}`;
}
