/**
 * Key layout of the ledger's sublevels. Event keys are `<runId>!<seq padded to 12>`, so a run's
 * events form one contiguous range that LevelDB's byte order sorts by seq.
 */

const SEQ_WIDTH = 12;
/** The largest seq the padding can hold; a run never gets near it. */
export const MAX_SEQ = 10 ** SEQ_WIDTH - 1;

/** Key of the run marker in the meta sublevel, written with a run's first event (the list of runs). */
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

/*
 * Keys of the index sublevel: facts the service writes in the same atomic batch as the events they
 * go with, read back at start-up (recovery) or to answer a repeated request.
 */

/** What the service keeps of an agent beyond its events (spec, grants, budget, sandbox id). */
export const agentKey = (agentId: string) => `agent!${agentId}`;

const idempotencyPrefix = (runId: string) => `idem!${runId}!`;
/** The answer to an earlier spawn with this idempotency key (a retried request gets it again). */
export const idempotencyKey = (runId: string, key: string) => `${idempotencyPrefix(runId)}${key}`;

/** How an agent ends, written before its sandbox is closed: a crash mid-close is not a lost agent. */
export const endingKey = (agentId: string) => `ending!${agentId}`;

/** The newest harness event recorded for an agent: a reconnect resumes after it. */
export const hseqKey = (agentId: string) => `hseq!${agentId}`;

/**
 * How many prompts an agent's harness acknowledged over its life. With the agent's `handle_settled`
 * events it tells recovery how many turns the harness still owes; the service writes it, so nothing
 * in the sandbox can change it.
 */
export const promptsKey = (agentId: string) => `prompts!${agentId}`;

/** Where a scripted agent is in its script (`ScriptCursor`): the next step, and the step taken but not yet delivered. */
export const scriptKey = (agentId: string) => `script!${agentId}`;

/** A run being purged: what is left to erase. Put as the run leaves the list of runs, deleted last. */
export const PURGE_PREFIX = "purge!";
export const purgeKey = (runId: string) => `${PURGE_PREFIX}${runId}`;

/**
 * Every index key a run owns, for a purge: the run-keyed families as prefixes, the agent-keyed ones
 * for each of its agents. A new key family must be added here, or a purge leaves it behind.
 */
export function runIndexKeys(runId: string, agentIds: readonly string[]): { prefixes: string[]; keys: string[] } {
  return {
    prefixes: [idempotencyPrefix(runId)],
    keys: agentIds.flatMap((id) => [agentKey(id), endingKey(id), hseqKey(id), promptsKey(id), scriptKey(id)]),
  };
}
