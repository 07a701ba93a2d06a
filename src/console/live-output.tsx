import type { AgentOutput, OutputEntry } from "./agent-output.ts";

/**
 * The open agent's output as it arrives: its text (thinking dimmed), each tool call with its
 * arguments and its output, partial while it runs. Text only: never markup.
 */
export function LiveOutput({ output, live }: { output: AgentOutput | null; live: boolean }) {
  if (output === null || output.entries.length === 0)
    return (
      <p class="muted">
        {live
          ? "Nothing yet: text and tool calls show here as they arrive, from when the agent was opened."
          : "The agent has ended; its output is in the event log and its result above."}
      </p>
    );
  return (
    <ol class="live-output" data-testid="live-output">
      {output.entries.map((entry) => (
        <Entry key={entry.key} entry={entry} />
      ))}
    </ol>
  );
}

function Entry({ entry }: { entry: OutputEntry }) {
  switch (entry.kind) {
    case "text":
    case "thinking":
      return (
        <li class={`out-${entry.kind}`}>
          <pre class="text">{entry.text}</pre>
        </li>
      );
    case "mark":
      return <li class="out-mark muted">{entry.text}</li>;
    case "tool":
      return (
        <li class={`out-tool tool-${entry.state}`} data-tool-call-id={entry.toolCallId}>
          <div>
            <strong>{entry.toolName}</strong> <code>{entry.args}</code>{" "}
            <span class="muted">{entry.state === "running" ? "running…" : entry.state}</span>
          </div>
          {entry.output && <pre class="text">{entry.output}</pre>}
        </li>
      );
  }
}
