import { type EventLog, eventLine } from "../../harness/event-log.ts";

/**
 * The harness's event log kept in memory: the same lines, `hseq` gap-free from 1 and the same
 * replay as the file log of a real sandbox's control folder, for as long as the sandbox lives.
 */
export function createMemoryEventLog(): EventLog {
  const lines: string[] = [];
  return {
    get lastHseq() {
      return lines.length;
    },
    append(event) {
      const line = eventLine(lines.length + 1, event);
      lines.push(line);
      return line;
    },
    linesAfter: (after) => lines.slice(Math.max(0, Math.floor(after))).join(""),
    close: () => undefined,
  };
}
