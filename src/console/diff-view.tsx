/** Lines of one file's diff drawn at most: a diff may hold 256 KiB, and every line is an element. */
const MAX_LINES = 2_000;

type LineKind = "meta" | "hunk" | "add" | "del" | "note" | "ctx";

/** What one line of a unified diff is; the `---`/`+++` header only before the first hunk. */
export function diffLines(diff: string): Array<{ kind: LineKind; text: string }> {
  const lines = diff.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let inHunk = false;
  return lines.map((text) => {
    if (text.startsWith("@@")) {
      inHunk = true;
      return { kind: "hunk", text };
    }
    if (!inHunk) return { kind: "meta", text };
    if (text.startsWith("+")) return { kind: "add", text };
    if (text.startsWith("-")) return { kind: "del", text };
    if (text.startsWith("\\")) return { kind: "note", text };
    return { kind: "ctx", text };
  });
}

/**
 * A unified diff as the daemon made it (`GET /agents/:agentId/changes`), each line coloured by
 * what it is: added, removed, a hunk's head, context. Text nodes only: the diff is the agent's.
 */
export function DiffView({ diff }: { diff: string }) {
  const lines = diffLines(diff);
  const shown = lines.slice(0, MAX_LINES);
  return (
    <pre class="diff">
      {shown.map((line, i) => (
        <span key={i} class={`diff-line diff-${line.kind}`}>
          {line.text === "" ? " " : line.text}
        </span>
      ))}
      {lines.length > shown.length && (
        <span class="diff-line diff-note">… {lines.length - shown.length} more lines not shown</span>
      )}
    </pre>
  );
}
