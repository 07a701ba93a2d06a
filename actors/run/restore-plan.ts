import type { AgentStart, Drain, Ending, PausedBy } from "../../machines/agent.types.ts";
import { parentsFirst } from "../../machines/tree.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { agentKey, endingKey, hseqKey, promptsKey } from "../../src/ledger/ledger-keys.ts";
import type { SandboxLimits } from "../../src/sandbox/runtime.ts";
import { rootGrants } from "../../src/spec/grants.ts";
import type { AgentRecord, RunView } from "../../src/views/run-view.ts";
import type { AgentMeta } from "./agent-table.ts";

/** What the ledger's index holds of one agent beside its events. */
export interface IndexedAgent {
  /** Absent for agents recorded before metas were kept: viewable, never live again. */
  meta: AgentMeta | undefined;
  /** How it was ending when the daemon stopped (written before its sandbox was closed). */
  ending: Ending | undefined;
  /** Prompts its harness took over its life, as of `hseq`. */
  prompts: number;
  /** The newest harness event recorded (`hseq!`): its harness's log is replayed after it. */
  hseq: number;
}

/** One agent of a restored run, and what its restart is. */
export type RestoredAgent =
  | {
      agentId: string;
      kind: "launch";
      start: AgentStart;
      prompt?: string;
      pendingPause?: PausedBy;
      /** A drain that reached it before its sandbox existed: it never starts. */
      drain?: Drain;
      /** Its result settled (or it ended): what a `waitFor` waits for. */
      settled: boolean;
    }
  | { agentId: string; kind: "ended"; settled: boolean }
  | { agentId: string; kind: "no-meta" };

/**
 * A restart is a start with different input: from the run's folded ledger (the view) and its
 * index keys, the input each agent's machine starts from, parents first. Pure: nothing here looks
 * at a sandbox (the machine's own `reattach` state does) or at a file a sandbox can write.
 *
 * - ended (the ledger has its `agent_ended`): no actor.
 * - ending (an `ending!` key): its machine starts closing, and ends as recorded.
 * - not yet forked (spawning, provisioning): started again as new; a sandbox half made is closed first.
 * - running or paused: `live`, with its turns (acknowledged prompts against settled turns), its
 *   children that will have an actor, its drain, its pending approvals and its sleep.
 */
export function restoredAgents(view: RunView, index: ReadonlyMap<string, IndexedAgent>): RestoredAgent[] {
  if (!view.agents.has(view.rootAgentId)) return [];
  const order = parentsFirst(view.rootAgentId, parentsOf(view));
  const willRun = (record: AgentRecord | undefined) =>
    record !== undefined && record.outcome === null && index.get(record.agentId)?.meta !== undefined;
  return order.map((agentId): RestoredAgent => {
    const record = view.agents.get(agentId)!;
    const indexed = index.get(agentId);
    const settled = record.settled !== null || record.outcome !== null;
    if (!indexed?.meta) return { agentId, kind: "no-meta" };
    if (record.outcome !== null) return { agentId, kind: "ended", settled };
    if (indexed.ending) return { agentId, kind: "launch", start: { state: "ending", ending: indexed.ending }, settled };
    if (record.state === "spawning" || record.state === "provisioning") {
      const parent = record.parentAgentId ? view.agents.get(record.parentAgentId) : undefined;
      return {
        agentId,
        kind: "launch",
        start: { state: record.state, again: true },
        ...(record.prompt !== null ? { prompt: record.prompt } : {}),
        // Under a paused parent it joins the pause, as a child spawned under one does.
        ...(parent?.state === "paused" ? { pendingPause: "cascade" as const } : {}),
        ...(record.drain ? { drain: record.drain } : {}),
        settled,
      };
    }
    const turns = restoredTurns({
      spawnPrompt: record.prompt,
      acknowledged: indexed.prompts,
      settled: record.settledTurns,
      hseq: indexed.hseq,
    });
    return {
      agentId,
      kind: "launch",
      start: {
        state: "live",
        restored: {
          pausedBy: record.state === "paused" ? (record.pausedBy ?? "operator") : null,
          ...turns,
          liveChildren: record.children.filter((id) => willRun(view.agents.get(id))).length,
          draining: record.drain ?? null,
          approvals: record.pendingPermissions.length,
          asleep: record.hibernated === true,
          recorded: { hseq: indexed.hseq, prompts: indexed.prompts },
        },
      },
      settled,
    };
  });
}

/**
 * A restored agent's turns, from its ledger alone: those it ran (`turns`), those its harness owes
 * (`inflight`), and its spawn prompt when the harness may never have got it (`resend`).
 *
 * The harness says it took a prompt with a `prompt_accepted` event, which the daemon counts
 * (`prompts!`, written with `hseq!`). The spawn prompt goes to the harness when the agent first
 * runs, so a daemon killed before that event was handled (the harness connecting and loading pi,
 * or the agent frozen by a subtree pause first) leaves no count: the harness either took the prompt,
 * and its turn settles after the restart, or never read it. Either way the agent owes that turn.
 * When not one harness event of the agent was recorded (`hseq!` 0), the harness actor replays the
 * harness's log from its start and hands the prompt over unless the log shows it was taken; any
 * recorded event means a turn began, so the harness had it.
 */
export function restoredTurns(ledger: {
  spawnPrompt: string | null;
  acknowledged: number;
  settled: number;
  hseq: number;
}): { turns: number; inflight: number; resend?: string } {
  const { spawnPrompt, acknowledged, settled, hseq } = ledger;
  const spawnPromptOwed = spawnPrompt !== null && acknowledged === 0 && settled === 0;
  const turns = Math.max(acknowledged, settled, spawnPromptOwed ? 1 : 0);
  return { turns, inflight: turns - settled, ...(spawnPromptOwed && hseq === 0 ? { resend: spawnPrompt } : {}) };
}

function parentsOf(view: RunView): Record<string, string | null> {
  const parents: Record<string, string | null> = {};
  for (const record of view.agents.values()) parents[record.agentId] = record.parentAgentId;
  return parents;
}

/** A count kept in the ledger's index (`prompts!`): 0 when absent or not a count. */
export function indexCount(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** What the ledger's index holds of each agent of the view (never a file a sandbox can write). */
export async function readIndex(
  ledger: Pick<Ledger, "getIndex">,
  view: RunView,
  limits: SandboxLimits,
): Promise<Map<string, IndexedAgent>> {
  const index = new Map<string, IndexedAgent>();
  for (const { agentId } of view.agents.values()) {
    const [rawMeta, rawEnding, rawPrompts, rawHseq] = await Promise.all([
      ledger.getIndex(agentKey(agentId)),
      ledger.getIndex(endingKey(agentId)),
      ledger.getIndex(promptsKey(agentId)),
      ledger.getIndex(hseqKey(agentId)),
    ]);
    const meta = rawMeta ? (JSON.parse(rawMeta) as AgentMeta) : undefined;
    // Agents recorded before grants existed get what their spec asked, within today's ceiling.
    if (meta) meta.grants ??= rootGrants({ ...meta.spec, limits: undefined }, limits, "spec");
    const ending = rawEnding ? (JSON.parse(rawEnding) as Ending) : undefined;
    index.set(agentId, { meta, ending, prompts: indexCount(rawPrompts), hseq: indexCount(rawHseq) });
  }
  return index;
}
