/**
 * A run as the console holds it: the daemon's own fold (`foldEvent`, the one `GET /runs/:runId`
 * answers from) over the persisted events of the stream, what each agent is doing now from the
 * ephemeral ones, and the event log. No DOM here: the node tests drive it with the same messages.
 */

import { type AgentView, isLive } from "../swarm-api.ts";
import { type AgentRecord, agentView, createRunView, foldEvent, type RunView } from "../views/run-view.ts";
import { brief } from "./format.ts";

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
/** The tail of streamed text shown as what an agent is saying. */
const TEXT_TAIL = 200;
const SUMMARY_CHARS = 300;

export class RunState {
  readonly view: RunView;
  /** The newest persisted `seq` folded in: the stream's `Last-Event-ID` on a reconnect. */
  lastSeq = 0;
  readonly log: LogEntry[] = [];
  /** Every event received, persisted and ephemeral (the log keeps only the newest `LOG_LIMIT`). */
  received = 0;
  readonly activity = new Map<string, Activity>();
  /** Event types seen, for the log's filter. */
  readonly types = new Set<string>();

  constructor(runId: string) {
    this.view = createRunView(runId);
  }

  /**
   * Folds one message in. A persisted event at or below `lastSeq` (a replay across a reconnect's
   * seam) is ignored. Never throws: the data of harness events is the agent's to write.
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
      foldEvent(this.view, { seq, at, type: message.event, agentId: agent, data: own });
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
      summary: brief(seq === null ? rest : omitStamps(rest), SUMMARY_CHARS),
    });
    if (this.log.length > LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT);
    if (agent !== null) this.track(agent, message.event, rest, at);
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

  pendingPermissions() {
    return [...this.view.permissions.values()].filter((p) => p.state === "pending");
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
