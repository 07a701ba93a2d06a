/**
 * What one agent says and does, as it arrives: its streamed text and thinking, and each tool call
 * with its arguments and its output (partial while it runs, whole once it ended). Kept for the agent
 * open in the panel only, from when it was opened: the text is ephemeral (never replayed), and
 * 1,000 agents' outputs would not fit a tab. DOM-free.
 */
import { brief } from "./format.ts";

export type OutputEntry =
  | { key: number; kind: "text" | "thinking"; text: string }
  | {
      key: number;
      kind: "tool";
      toolCallId: string;
      toolName: string;
      args: string;
      output: string;
      state: "running" | "done" | "error";
    }
  | { key: number; kind: "mark"; text: string };

/** Entries kept: the newest. */
const ENTRIES = 200;
/** Characters kept of one text block or one tool output: the tail. */
const CHARS = 16_384;
const ARGS_CHARS = 2_000;

export class AgentOutput {
  readonly entries: OutputEntry[] = [];
  #keys = 0;

  constructor(readonly agentId: string) {}

  take(type: string, data: Record<string, unknown>): boolean {
    switch (type) {
      case "text":
      case "thinking":
        if (typeof data.delta !== "string") return false;
        this.#say(type, data.delta);
        return true;
      case "tool_start":
        this.#push({
          key: 0,
          kind: "tool",
          toolCallId: typeof data.toolCallId === "string" ? data.toolCallId : "",
          toolName: typeof data.toolName === "string" ? data.toolName.slice(0, 64) : "a tool",
          args: brief(data.args ?? {}, ARGS_CHARS),
          output: "",
          state: "running",
        });
        return true;
      case "tool_update":
      case "tool_end": {
        const call = this.#call(data.toolCallId);
        if (call === undefined) return false;
        if (typeof data.output === "string") call.output = data.output.slice(-CHARS);
        if (type === "tool_end") call.state = data.isError === true ? "error" : "done";
        return true;
      }
      case "agent_start":
        this.#push({ key: 0, kind: "mark", text: "turn started" });
        return true;
      case "handle_settled":
        this.#push({ key: 0, kind: "mark", text: `turn settled: ${String(data.outcome)}` });
        return true;
      case "agent_ended":
        this.#push({ key: 0, kind: "mark", text: `ended: ${String(data.outcome)}` });
        return true;
      // A tool call swarmd refused or failed (a host call refused, an approval denied, ...).
      case "tool_refused":
        this.#push({
          key: 0,
          kind: "mark",
          text: `refused ${typeof data.tool === "string" ? data.tool.slice(0, 64) : "a tool"}: ${brief(data.message ?? data.code ?? "", 300)}`,
        });
        return true;
      default:
        return false;
    }
  }

  #say(kind: "text" | "thinking", delta: string): void {
    const last = this.entries.at(-1);
    if (last?.kind === kind) last.text = (last.text + delta).slice(-CHARS);
    else this.#push({ key: 0, kind, text: delta.slice(-CHARS) });
  }

  #call(toolCallId: unknown) {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i];
      if (entry?.kind === "tool" && entry.toolCallId === toolCallId) return entry;
    }
    return undefined;
  }

  #push(entry: OutputEntry): void {
    entry.key = ++this.#keys;
    this.entries.push(entry);
    if (this.entries.length > ENTRIES) this.entries.splice(0, this.entries.length - ENTRIES);
  }
}
