import type { PermissionView } from "../swarm-api.ts";

/** Widths that keep a row on one line of a wide terminal; `--json` has everything unclipped. */
const ARGS_WIDTH = 48;
const MESSAGE_WIDTH = 60;

/**
 * The requests as a table, oldest first as given: request id, agent, tool, age and a one-line
 * summary of the call's arguments; once any listed request is resolved, also its decision, who
 * decided and the deny message. `now` is passed in so the ages are testable.
 */
export function permissionTable(permissions: readonly PermissionView[], now: number): string[] {
  const resolved = permissions.some((p) => p.state === "resolved");
  const header = ["REQUEST", "AGENT", "TOOL", "AGE", ...(resolved ? ["DECISION", "BY"] : []), "ARGS", ...(resolved ? ["MESSAGE"] : [])];
  const rows = permissions.map((p) => [
    p.requestId,
    p.agentId,
    oneLine(p.tool),
    age(now - p.at),
    ...(resolved ? [p.decision ?? "pending", p.by ?? "-"] : []),
    argsSummary(p.args),
    ...(resolved ? [clip(oneLine(p.message ?? ""), MESSAGE_WIDTH)] : []),
  ]);
  return columns([header, ...rows]);
}

/** The call's arguments as one line of JSON (which escapes newlines and control characters), clipped. */
export function argsSummary(args: Record<string, unknown>, width = ARGS_WIDTH): string {
  return clip(JSON.stringify(args) ?? "{}", width);
}

/** `42s`, `5m`, `3h`, `2d`: how long ago, at a glance. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3_600) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3_600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** Text from the service or an agent, safe for one table cell: no line breaks or terminal controls. */
function oneLine(text: string): string {
  return text.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** Cells padded to their column's widest, two spaces apart; the last column unpadded. */
function columns(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ").trimEnd());
}
