import { pollUntil } from "../poll.ts";
import type { Freezer } from "./freezer.ts";
import { FREEZER_DEADLINE_MS } from "./freezer.ts";
import { hasEnvEntry, isAliveProc, isStopped, listProcs, type ProcEntry, signalPid } from "./proc-table.ts";
import { sandboxTag } from "./sandbox-tag.ts";

export interface SignalFreezerOptions {
  sandboxId: string;
  /** A second tag its processes may carry: a pooled harness keeps its pool id's (`SandboxRecord.tag`). */
  poolTag?: string;
  /** The harness's first process; started detached, so it leads its own session. */
  rootPid?: number;
}

/**
 * The fallback when no cgroup freezer is writable: members are found by walking /proc (the
 * sandbox tag in their environment, or the harness's session), then sent SIGSTOP / SIGCONT /
 * SIGKILL. Each step repeats until a fresh walk finds nothing left to do, so a process forked
 * while the signals were going out is caught by the next walk.
 */
export function createSignalFreezer(options: SignalFreezerOptions): Freezer {
  const tags = [options.sandboxId, ...(options.poolTag ? [options.poolTag] : [])].map(sandboxTag);

  const memberEntries = async (): Promise<ProcEntry[]> => {
    const live = (await listProcs()).filter((e) => isAliveProc(e) && e.pid !== process.pid);
    const tagged = await Promise.all(
      live.map(
        async (e) =>
          (options.rootPid !== undefined && e.sid === options.rootPid) ||
          (await Promise.all(tags.map((tag) => hasEnvEntry(e.pid, tag)))).includes(true),
      ),
    );
    return live.filter((_, i) => tagged[i]);
  };

  /** Signal the members that `needs` until a walk finds none that still needs it. */
  const settle = (needs: (e: ProcEntry) => boolean, send: NodeJS.Signals, what: string, signal: AbortSignal) =>
    pollUntil(
      async () => {
        const pending = (await memberEntries()).filter(needs);
        if (pending.length === 0) return true;
        for (const entry of pending) signalPid(entry.pid, send);
        return undefined;
      },
      { timeoutMs: FREEZER_DEADLINE_MS, intervalMs: 10, signal, what },
    );

  return {
    kind: "signal",
    prepareLaunch: async () => [],
    members: async () => (await memberEntries()).map((e) => e.pid),
    async isFrozen() {
      const entries = await memberEntries();
      return entries.length > 0 && entries.every(isStopped);
    },
    async freeze(signal) {
      await settle((e) => !isStopped(e), "SIGSTOP", "every sandbox process to stop", signal);
    },
    async thaw(signal) {
      await settle(isStopped, "SIGCONT", "every sandbox process to continue", signal);
    },
    async killAll(signal) {
      await settle(() => true, "SIGKILL", "every sandbox process to die", signal);
    },
    release: async () => undefined,
  };
}
