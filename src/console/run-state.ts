/**
 * A run as the console holds it: the daemon's own fold (`foldEvent`, the one `GET /runs/:runId`
 * answers from) over the persisted events of the stream, what each agent is doing now from the
 * ephemeral ones, and the event log. No DOM here: the node tests drive it with the same messages.
 */
import { agentView, createRunView, foldEvent, type AgentRecord, type RunView } from "../views/run-view.ts";
import type { AgentView } from "../swarm-api.ts";

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
  data: Record<string, unknown>;
}

/** What an agent is doing now, from the events of its running turn. */
export type Activity = { kind: "tool"; toolName: string; since: number } | { kind: "text"; text: string } | { kind: "thinking" };

/** The log keeps the newest entries: a long run's whole history is the ledger's, not the page's. */
export const LOG_LIMIT = 5_000;
/** The tail of streamed text shown as what an agent is saying. */
const TEXT_TAIL = 200;

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

  /** Folds one message in. A persisted event at or below `lastSeq` (a replay across a reconnect's seam) is ignored. */
  apply(message: StreamMessage, now = Date.now()): void {
    const data = parseData(message.data);
    if (data === null) return;
    const { agentId, seq: _seq, at, ...rest } = data;
    const agent = typeof agentId === "string" ? agentId : null;
    const seq = message.id === undefined ? null : Number(message.id);
    if (seq !== null) {
      if (!Number.isSafeInteger(seq) || seq <= this.lastSeq) return;
      this.lastSeq = seq;
      foldEvent(this.view, { seq, at: typeof at === "number" ? at : now, type: message.event, agentId: agent, data: rest });
    }
    this.received += 1;
    this.types.add(message.event);
    this.log.push({ key: this.received, seq, at: typeof at === "number" ? at : now, type: message.event, agentId: agent, data: rest });
    if (this.log.length > LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT);
    if (agent !== null) this.track(agent, message.event, rest, now);
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
    const visit = (agentId: string, depth: number) => {
      const record = this.view.agents.get(agentId);
      if (record === undefined) return;
      rows.push({ record, depth });
      for (const child of record.children) visit(child, depth + 1);
    };
    visit(this.view.rootAgentId, 0);
    return rows;
  }

  pendingPermissions() {
    return [...this.view.permissions.values()].filter((p) => p.state === "pending");
  }

  private track(agentId: string, type: string, data: Record<string, unknown>, now: number): void {
    switch (type) {
      case "tool_start":
        this.activity.set(agentId, { kind: "tool", toolName: String(data.toolName ?? "tool"), since: now });
        return;
      case "text": {
        const previous = this.activity.get(agentId);
        const text = (previous?.kind === "text" ? previous.text : "") + String(data.delta ?? "");
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

function parseData(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
