import { useState } from "preact/hooks";
import { MAX_FORK_COPIES } from "../swarm-api.ts";
import { forkPrompts } from "./forks.ts";

/** A fork's prompts, one per line: one child each (1..MAX_FORK_COPIES; the API refuses others, saying so). */
export function ForkForm({ busy, onSend }: { busy: boolean; onSend: (prompts: string[]) => void }) {
  const [text, setText] = useState("");
  const prompts = forkPrompts(text);
  const label = `Prompts, one per line (1..${MAX_FORK_COPIES}): one child each`;
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        onSend(prompts);
      }}
    >
      <textarea
        aria-label={label}
        placeholder={label}
        rows={3}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <span class="muted fork-count" data-testid="fork-count">
        {prompts.length} {prompts.length === 1 ? "child" : "children"}
      </span>
      <button type="submit" disabled={busy}>
        Send
      </button>
    </form>
  );
}
