/**
 * When the console offers a fork and an adopt: the daemon takes both between turns only, and the
 * page says why a button is disabled rather than send what it knows will be refused. DOM-free.
 */
import { isLive } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";

/**
 * Why the agent cannot be forked now, or null when it can: the daemon forks an agent between
 * turns only (idle, hibernated, or paused while idle). `betweenTurns` is what the page knows
 * (null: not known, so the daemon is asked and says).
 */
export function forkBlocked(record: AgentRecord, betweenTurns: boolean | null): string | null {
  if (record.state !== "running" && record.state !== "paused") return `${record.state}: not started yet`;
  if (record.draining) return "draining: it starts no new children";
  if (betweenTurns === false) return "in a turn: an agent is forked between turns";
  return null;
}

/** The prompts of a fork, one per line; blank lines are left out. */
export const forkPrompts = (text: string): string[] =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");

/**
 * Why the fork child's changes cannot be adopted into its parent now, or null when they can: the
 * parent takes them between turns, while it lives. `betweenTurns` is what the page knows of the
 * parent (null: not known, so the daemon is asked and says).
 */
export function adoptBlocked(parent: AgentRecord | undefined, betweenTurns: boolean | null): string | null {
  if (parent === undefined) return "its parent is not known to the page";
  if (!isLive(parent.state)) return `${parent.specName} has ended: there is nothing to adopt into`;
  if (betweenTurns === false) return `${parent.specName} is in a turn: changes are adopted between turns`;
  return null;
}
