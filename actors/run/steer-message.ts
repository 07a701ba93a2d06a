import type { AgentStatus } from "../../src/swarm-api.ts";
import type { AgentRecord } from "../../src/views/run-view.ts";

/**
 * The one message a subtree steer delivers to the named parent (spec §4.8): the operator's text,
 * a table of the parent's children (agentId, specName, state, the prompt each was given), and an
 * instruction to re-plan. The children receive nothing directly.
 */
export function subtreeSteerMessage(
  agents: ReadonlyMap<string, AgentRecord>,
  status: (agentId: string) => AgentStatus | null,
  parentId: string,
  text: string,
): string {
  const children = agents.get(parentId)?.children ?? [];
  const rows = children.map((id) => {
    const child = agents.get(id);
    const state =
      child && (child.state === "done" || child.state === "aborted")
        ? `${child.state} (${child.outcome ?? "?"})`
        : (status(id) ?? "unknown");
    return `| ${id} | ${cell(child?.specName ?? "")} | ${state} | ${cell(child?.prompt ?? "(no prompt)")} |`;
  });
  const table =
    rows.length === 0
      ? "You have no child agents."
      : ["| agentId | specName | state | asked to do |", "|---|---|---|---|", ...rows].join("\n");
  return [
    "Operator steer for you and the agents under you:",
    "",
    text,
    "",
    "Your child agents:",
    "",
    table,
    "",
    "Re-plan your work and your children's in light of this message: decide what each child should do now (continue, be replaced, or be ignored) and carry on.",
  ].join("\n");
}

function cell(text: string): string {
  const flat = text.replace(/\s+/g, " ").replaceAll("|", "\\|");
  return flat.length > 200 ? `${flat.slice(0, 197)}...` : flat;
}
