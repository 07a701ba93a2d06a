/**
 * One line of the event log for an event's data: the fork events in words (who was forked into
 * whom and where, what was adopted), every other event as its JSON. The data is read with type
 * checks only: a harness writes the data of its own events, and nothing here may throw on it.
 */
import { brief, forkPointText } from "./format.ts";

type Data = Record<string, unknown>;

/** The event's data as one line, cut to `max` characters. */
export function eventSummary(type: string, data: Data, max: number): string {
  switch (type) {
    case "agent_forked":
      return cut(forkedText(data) ?? brief(data, max), max);
    case "changes_adopted":
      return cut(adoptedText(data) ?? brief(data, max), max);
    case "agent_spawned": {
      const { forkedFrom, ...rest } = data;
      const from = forkOf(forkedFrom);
      return from ? cut(`fork of ${from} · ${brief(rest, max)}`, max) : brief(data, max);
    }
    default:
      return brief(data, max);
  }
}

/** "2 children after turn 1: a_…, a_…". */
function forkedText(data: Data): string | null {
  const { children } = data;
  if (!Array.isArray(children)) return null;
  const ids = children.filter((id): id is string => typeof id === "string");
  const where = forkPointText(data.forkPoint);
  return `${ids.length} ${ids.length === 1 ? "child" : "children"}${where ? ` ${where}` : ""}: ${ids.join(", ")}`;
}

/** "from a_…: added x.txt, modified y.txt", or "from a_…: nothing to apply". */
function adoptedText(data: Data): string | null {
  const { from, files } = data;
  if (typeof from !== "string" || !Array.isArray(files)) return null;
  const changes = files.flatMap((file: unknown) => {
    if (typeof file !== "object" || file === null) return [];
    const { path, change } = file as Data;
    return typeof path === "string" && typeof change === "string" ? [`${change} ${path}`] : [];
  });
  return `from ${from}: ${changes.length > 0 ? changes.join(", ") : "nothing to apply"}`;
}

/** "a_… after turn 1": where a fork child's `agent_spawned` says it was forked from. */
function forkOf(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return null;
  const { agentId, forkPoint } = value as Data;
  if (typeof agentId !== "string") return null;
  const where = forkPointText(forkPoint);
  return where ? `${agentId} ${where}` : agentId;
}

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);
