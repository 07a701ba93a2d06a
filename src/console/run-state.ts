/**
 * A run as the console holds it: the daemon's snapshot (`GET /runs/:runId`, what the page opens
 * from), then the daemon's own fold (`foldEvent`) over the persisted events of the stream after the
 * snapshot's `asOf`; what each agent is doing now from the ephemeral ones; the event log; the run's
 * timeline once asked for; the open agent's output. No DOM here: the node tests drive it with the
 * same messages.
 */

import type { AgentView, PermissionView, RunSnapshot, RunTimeline } from "../swarm-api.ts";
import { isLive } from "../swarm-api.ts";
import { foldTimeline, TIMELINE_TYPES, type Timeline, timelineFrom } from "../views/run-timeline.ts";
import {
  type AgentRecord,
  agentView,
  createRunView,
  foldEvent,
  type RunView,
  recordOfView,
  type StoredEvent,
} from "../views/run-view.ts";
import { AgentOutput } from "./agent-output.ts";
import { eventSummary } from "./event-summary.ts";

/** One SSE message as the stream hands it over: `id` only on persisted events. */
export interface StreamMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/** One line of the event log. `seq` is null for an ephemeral event (never replayed). */
export interface LogEntry {
  key: number;
  seq: number | null;
  at: number;
  type: string;
  agentId: string | null;
  /** The event's data as one line of JSON, cut to `SUMMARY_CHARS`. */
  summary: string;
}

/** What an agent is doing now, from the events of its running turn. */
export type Activity =
  | { kind: "tool"; toolName: string; since: number }
  | { kind: "text"; text: string }
  | { kind: "thinking" };

/** The log keeps the newest entries: a long run's whole history is the ledger's, not the page's. */
export const LOG_LIMIT = 5_000;
/** Events before the snapshot read again for the log (they are not folded: the snapshot has them). */
export const LOG_BACKFILL = 500;
/** The tail of streamed text shown as what an agent is saying. */
const TEXT_TAIL = 200;
const SUMMARY_CHARS = 300;

export class RunState {
  view: RunView;
  /** The newest persisted `seq` received: the stream's `Last-Event-ID` on a reconnect. */
  lastSeq = 0;
  /** Whether the snapshot was taken in (`load`); before it, nothing is folded. */
  loaded = false;
  readonly log: LogEntry[] = [];
  /** Every event received, persisted and ephemeral (the log keeps only the newest `LOG_LIMIT`). */
  received = 0;
  /** Persisted events folded into the view since the snapshot: what a filtered tree is computed again on. */
  folded = 0;
  readonly activity = new Map<string, Activity>();
  /**
   * Whether each agent is in a turn, from its persisted `agent_start`, `agent_end` and
   * `handle_settled` since the stream's start (the backfill included), as the timeline reads them;
   * an agent with none of them received is absent: not known.
   */
  readonly turns = new Map<string, boolean>();
  /** Event types seen, for the log's filter. */
  readonly types = new Set<string>();
  /** The run's timeline: null until asked for (`wantTimeline`), then kept current. */
  timeline: Timeline | null = null;
  /** Timeline events received while its answer is on its way, folded once it came. */
  #timelineBuffer: StoredEvent[] | null = null;
  /** The output of the agent open in the panel (`watch`). */
  output: AgentOutput | null = null;

  constructor(runId: string) {
    this.view = createRunView(runId);
  }

  /**
   * Takes the run as the daemon's snapshot has it, with its pending approval requests, and starts
   * the stream `LOG_BACKFILL` events before it, so the log shows what led here. The fold goes on
   * after the snapshot's `asOf`.
   */
  load(snapshot: RunSnapshot, pending: readonly PermissionView[]): void {
    this.view = snapshotView(snapshot, pending);
    this.lastSeq = Math.max(0, snapshot.asOf - LOG_BACKFILL);
    this.loaded = true;
  }

  /**
   * Folds one message in. A persisted event at or below `lastSeq` (a replay across a reconnect's
   * seam) is ignored; one at or below the snapshot's `asOf` goes to the log only. Never throws:
   * the data of harness events is the agent's to write.
   */
  apply(message: StreamMessage, now = Date.now()): void {
    const data = parseData(message.data);
    if (data === null) return;
    const seq = message.id === undefined ? null : Number(message.id);
    // The daemon puts `agentId`, `seq` and `at` on persisted events; on an ephemeral one only
    // `agentId` is its, and a harness's own `at` is nobody's clock: it stays in the data.
    const { agentId, ...rest } = data;
    const agent = typeof agentId === "string" ? agentId : null;
    let at = now;
    if (seq !== null) {
      if (!Number.isSafeInteger(seq) || seq <= this.lastSeq) return;
      const { seq: _seq, at: stamped, ...own } = rest;
      if (typeof stamped === "number") at = stamped;
      this.lastSeq = seq;
      const stored = { seq, at, type: message.event, agentId: agent, data: own };
      if (seq > this.view.asOf) {
        foldEvent(this.view, stored);
        this.folded += 1;
      }
      if (TIMELINE_TYPES.has(stored.type)) this.#timelineEvent(stored);
    }
    this.received += 1;
    this.types.add(message.event);
    // The log keeps a line, not the data: events may be 256 KiB each.
    this.log.push({
      key: this.received,
      seq,
      at,
      type: message.event,
      agentId: agent,
      summary: eventSummary(message.event, seq === null ? rest : omitStamps(rest), SUMMARY_CHARS),
    });
    if (this.log.length > LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT);
    if (agent !== null) {
      if (seq !== null) this.trackTurn(agent, message.event);
      this.track(agent, message.event, rest, at);
      if (this.output?.agentId === agent) this.output.take(message.event, rest);
    }
  }

  agent(agentId: string): AgentRecord | undefined {
    return this.view.agents.get(agentId);
  }

  /** The agent as `GET /agents/:agentId` shows it (without the live-only fields). */
  agentView(agentId: string): AgentView | undefined {
    const record = this.view.agents.get(agentId);
    return record === undefined ? undefined : agentView(record);
  }

  /** The root first, then each agent's children in spawn order, with their depth in the tree. */
  tree(): Array<{ record: AgentRecord; depth: number }> {
    const rows: Array<{ record: AgentRecord; depth: number }> = [];
    this.walk(this.view.rootAgentId, 0, (record, depth) => rows.push({ record, depth }));
    return rows;
  }

  /** The agent and the live agents under it, parents first. */
  liveSubtree(agentId: string): string[] {
    const members: string[] = [];
    this.walk(agentId, 0, (record) => isLive(record.state) && members.push(record.agentId));
    return members;
  }

  /** Depth first from `agentId`, parents before their children, children in spawn order. */
  private walk(agentId: string, depth: number, visit: (record: AgentRecord, depth: number) => unknown): void {
    const record = this.view.agents.get(agentId);
    if (record === undefined) return;
    visit(record, depth);
    for (const child of record.children) this.walk(child, depth + 1, visit);
  }

  /**
   * Whether the agent is between turns, as far as the page knows: true or false once one of its
   * turn events came; null when none did (the events before the backfill are not read). Only the
   * daemon can say for sure; it refuses a fork or adopt in a turn (`AGENT_BUSY`).
   */
  betweenTurns(agentId: string): boolean | null {
    const turn = this.turns.get(agentId);
    return turn === undefined ? null : !turn;
  }

  pendingPermissions(): PermissionView[] {
    return [...this.view.permissions.values()].filter((p) => p.state === "pending");
  }

  /** Whether every agent of the run has ended (a run with none yet has not). */
  ended(): boolean {
    if (this.view.agents.size === 0) return false;
    for (const record of this.view.agents.values()) if (isLive(record.state)) return false;
    return true;
  }

  /** Keeps the output of `agentId` from now on (null: of none). */
  watch(agentId: string | null): void {
    if (this.output?.agentId === agentId) return;
    this.output = agentId === null ? null : new AgentOutput(agentId);
  }

  /** From now on, keeps the timeline events that arrive until `setTimeline` takes the answer. */
  wantTimeline(): void {
    if (this.timeline === null && this.#timelineBuffer === null) this.#timelineBuffer = [];
  }

  /**
   * Takes `GET /runs/:runId/timeline`'s answer, asked for after `wantTimeline`: it is at or past
   * every event received before the question, and the events kept since continue it.
   */
  setTimeline(answer: RunTimeline): void {
    const timeline = timelineFrom(answer);
    for (const event of this.#timelineBuffer ?? []) foldTimeline(timeline, event);
    this.#timelineBuffer = null;
    this.timeline = timeline;
  }

  #timelineEvent(event: StoredEvent): void {
    if (this.timeline !== null) foldTimeline(this.timeline, event);
    else this.#timelineBuffer?.push(event);
  }

  private trackTurn(agentId: string, type: string): void {
    switch (type) {
      case "agent_start":
        this.turns.set(agentId, true);
        return;
      case "agent_end":
      case "handle_settled":
        this.turns.set(agentId, false);
        return;
      case "agent_ended":
        this.turns.delete(agentId);
        return;
    }
  }

  private track(agentId: string, type: string, data: Record<string, unknown>, at: number): void {
    switch (type) {
      case "tool_start":
        this.activity.set(agentId, {
          kind: "tool",
          toolName: typeof data.toolName === "string" ? data.toolName.slice(0, 64) : "a tool",
          since: at,
        });
        return;
      case "text": {
        const previous = this.activity.get(agentId);
        const text =
          (previous?.kind === "text" ? previous.text : "") +
          (typeof data.delta === "string" ? data.delta.slice(-TEXT_TAIL) : "");
        this.activity.set(agentId, { kind: "text", text: text.slice(-TEXT_TAIL) });
        return;
      }
      case "thinking":
        this.activity.set(agentId, { kind: "thinking" });
        return;
      case "tool_end":
      case "message_end":
      case "turn_end":
      case "agent_end":
      case "handle_settled":
      case "agent_ended":
        this.activity.delete(agentId);
        return;
    }
  }
}

/**
 * The run view a snapshot stands for, as the fold would have made it: each agent's view, its
 * children in spawn order, and its pending approval requests. What the snapshot does not carry
 * (prompt, inputs, settled turns) the agent panel reads from `GET /agents/:agentId`.
 */
export function snapshotView(snapshot: RunSnapshot, pending: readonly PermissionView[]): RunView {
  const view = createRunView(snapshot.runId);
  view.rootAgentId = snapshot.rootAgentId;
  view.asOf = snapshot.asOf;
  view.usage = { ...snapshot.usage };
  for (const { queuePosition: _place, ...agent } of snapshot.agents)
    view.agents.set(agent.agentId, recordOfView(agent));
  for (const record of view.agents.values())
    if (record.parentAgentId !== null) view.agents.get(record.parentAgentId)?.children.push(record.agentId);
  // Read after the snapshot: a request asked since comes again on the stream, and is folded then.
  for (const request of pending)
    if (view.agents.get(request.agentId)?.pendingPermissions.includes(request.requestId))
      view.permissions.set(request.requestId, request);
  return view;
}

function omitStamps({ seq: _seq, at: _at, ...own }: Record<string, unknown>): Record<string, unknown> {
  return own;
}

function parseData(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
