import { MACHINE_TRANSITIONS_KEPT, type MachineView } from "../swarm-api.ts";
import { columns, oneLine } from "./table-format.ts";

/**
 * `swarm machine`: the agent's machine as lines: its state value as compact JSON, its tags, then
 * its transitions, oldest first, one per line: time (UTC, to the millisecond: a few happen within
 * one second), the event taken and the state value it led to.
 */
export function machineLines(machine: MachineView): string[] {
  const lines = [
    `machine of ${machine.agentId}${machine.running ? "" : " (not running: the agent ended before the daemon started)"}`,
    `state  ${compactJson(machine.value)}`,
    `tags   ${machine.tags.map(oneLine).join(", ") || "-"}`,
  ];
  const { transitions } = machine;
  if (transitions.length === 0) return [...lines, "no transitions since the daemon started"];
  // The daemon keeps only the latest ones: say so rather than let the first line pass for the start.
  if (transitions.length >= MACHINE_TRANSITIONS_KEPT)
    lines.push(`(the latest ${MACHINE_TRANSITIONS_KEPT} transitions; older ones are not kept)`);
  const rows = transitions.map((t) => [new Date(t.at).toISOString(), oneLine(t.event), compactJson(t.value)]);
  return [...lines, ...columns([["TIME", "EVENT", "STATE"], ...rows])];
}

/** One line of JSON (it escapes line breaks and control characters); `null` for a missing value. */
function compactJson(value: unknown): string {
  return JSON.stringify(value) ?? "null";
}
