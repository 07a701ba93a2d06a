import { z } from "zod";
import { errorMessage } from "../../src/errors.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { PURGE_PREFIX, purgeKey, runIndexKeys } from "../../src/ledger/ledger-keys.ts";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";

/** The run being purged, as the purge needs it. */
export interface PurgeTarget {
  runId: string;
  /** End every live agent as a plain delete does. */
  stopAll(): Promise<void>;
  /** Every agent of the run and every sandbox id it recorded. */
  recorded(): { agentIds: string[]; sandboxIds: string[] };
  /** Stop the run's supervisor and timers. */
  close(): void;
}

/**
 * The purge marker (`purge!<runId>`): what a purge has left to erase once the run's events, which
 * name its agents, may already be gone. Versioned, as everything stored is.
 */
const PurgeMarker = z.object({ v: z.literal(1), agentIds: z.array(z.string()), sandboxIds: z.array(z.string()) });
type PurgeMarker = z.infer<typeof PurgeMarker>;

/** What erasing a run needs; the same for a purge now and for one finished at start-up. */
export interface PurgeDeps {
  ledger: Ledger;
  runtime: SandboxRuntime;
  results: ResultStore;
  log(message: string): void;
}

/**
 * DELETE /runs/:runId?purge=true: the run is ended exactly as a plain delete ends it, then removed
 * for good. Crash safety rests on one atomic ledger batch: `dropRun` takes the run off the list of
 * runs and puts the marker together, so a restart sees either the whole run or no run, never a half
 * one. What follows (sandboxes, results, events, index keys, the marker last) is a sweep that a
 * restart redoes from the marker (`finishPurges`). A sweep that fails is left to the next start in
 * the same way; the run is gone from the API either way. `forget` takes it out of the service's maps
 * right after the drop, so every route answers 404 from the moment the ledger no longer has it.
 */
export async function purgeRun(run: PurgeTarget, deps: PurgeDeps, forget: () => void): Promise<void> {
  await run.stopAll();
  const { agentIds, sandboxIds } = run.recorded();
  const marker: PurgeMarker = { v: 1, agentIds, sandboxIds };
  await deps.ledger.dropRun(run.runId, { key: purgeKey(run.runId), value: JSON.stringify(marker) });
  forget();
  run.close();
  await erase(run.runId, marker, deps);
}

/** Start-up: finish every purge a crash (or a failed sweep) cut short, before any run is restored. */
export async function finishPurges(deps: PurgeDeps): Promise<void> {
  for (const { key, value } of await deps.ledger.listIndex(PURGE_PREFIX)) {
    const runId = key.slice(PURGE_PREFIX.length);
    const marker = parseMarker(value);
    if (!marker) {
      deps.log(
        `run ${runId}: its purge marker is unreadable; its events and index keys are erased, its sandboxes and results are left`,
      );
      await deps.ledger
        .eraseRun(runId, { ...runIndexKeys(runId, []), keys: [key] })
        .catch((err: unknown) =>
          deps.log(`run ${runId}: erasing it failed, to be retried at the next start: ${errorMessage(err)}`),
        );
      continue;
    }
    deps.log(`run ${runId}: finishing its purge, cut short when the service stopped`);
    await erase(runId, marker, deps).catch((err: unknown) =>
      deps.log(`run ${runId}: its purge failed again, to be retried at the next start: ${errorMessage(err)}`),
    );
  }
}

/** Everything of the run after the drop; each step idempotent, the marker deleted last. */
async function erase(runId: string, marker: PurgeMarker, { ledger, runtime, results }: PurgeDeps): Promise<void> {
  // Beside the recorded sandboxes, any the runtime still holds for the run (one made for an agent
  // that was provisioned again after a restart, say).
  const held = (await runtime.list(AbortSignal.timeout(60_000)))
    .filter((s) => s.runId === runId)
    .map((s) => s.sandboxId);
  for (const sandboxId of new Set([...marker.sandboxIds, ...held]))
    await runtime.close(sandboxId, AbortSignal.timeout(60_000));
  // What forks kept with the run: fork points, and the /work of fork children that ended.
  await runtime.dropRun(runId, AbortSignal.timeout(60_000));
  for (const agentId of marker.agentIds) results.remove(agentId);
  const index = runIndexKeys(runId, marker.agentIds);
  await ledger.eraseRun(runId, { prefixes: index.prefixes, keys: [...index.keys, purgeKey(runId)] });
}

function parseMarker(value: string): PurgeMarker | undefined {
  try {
    const parsed = PurgeMarker.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
