import type { PermissionView } from "../swarm-api.ts";
import { age, clip, columns, oneLine } from "./table-format.ts";

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
  const header = [
    "REQUEST",
    "AGENT",
    "TOOL",
    "AGE",
    ...(resolved ? ["DECISION", "BY"] : []),
    "ARGS",
    ...(resolved ? ["MESSAGE"] : []),
  ];
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
