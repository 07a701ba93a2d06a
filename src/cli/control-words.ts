import type { AgentDetail, ControlResponse, Delivery, MemberResult, StopMode } from "../swarm-api.ts";

/**
 * What a control did, in words (docs/controls.md, "What the CLI says"): one line per member,
 * `<agentId> <what happened>`, and for more than one member a count (`stopped 5 agents`).
 */

export type ControlVerb = "pause" | "resume" | "stop" | "steer";
/** A stop is an abort or a drain; the others have one way. */
export type ControlKind = Exclude<ControlVerb, "stop"> | StopMode;

/** What each outcome of a member is called, by control: done, nothing to do, could not. */
const WORDS: Record<ControlKind, { applied: string; noop: string; failed: string; count: string }> = {
  pause: { applied: "paused", noop: "already paused", failed: "not paused", count: "paused" },
  resume: { applied: "resumed", noop: "not paused: nothing to resume", failed: "not resumed", count: "resumed" },
  abort: { applied: "stopped", noop: "already ended", failed: "not stopped", count: "stopped" },
  drain: {
    applied: "draining: takes no new prompt, steer or spawn, and ends once its accepted turns settle",
    noop: "already ended",
    failed: "not drained",
    count: "draining",
  },
  steer: { applied: "steered", noop: "not live: nothing to steer", failed: "not steered", count: "steered" },
};

const DELIVERY: Record<Delivery, string> = {
  steer: " into its running turn",
  turn: ": it was idle, so the message starts a new turn",
  queued: ": queued until it runs (it is paused or not yet running)",
};

export function memberLine(kind: ControlKind, result: MemberResult, delivery?: Delivery): string {
  const words = WORDS[kind];
  if (result.outcome === "failed") return `${result.agentId} ${words.failed}: ${result.error ?? "no reason given"}`;
  if (result.outcome === "noop") return `${result.agentId} ${words.noop}`;
  return `${result.agentId} ${words.applied}${delivery ? DELIVERY[delivery] : ""}`;
}

/** `paused 3 agents, 1 already paused, 1 failed`: the members counted by outcome. */
export function countLine(kind: ControlKind, { results }: ControlResponse): string {
  const words = WORDS[kind];
  const count = (outcome: MemberResult["outcome"]) => results.filter((r) => r.outcome === outcome).length;
  const agents = (n: number) => `${n} agent${n === 1 ? "" : "s"}`;
  const parts = [`${words.count} ${agents(count("applied"))}`];
  if (count("noop") > 0) parts.push(`${count("noop")} ${words.noop}`);
  if (count("failed") > 0) parts.push(`${count("failed")} failed`);
  return parts.join(", ");
}

/** Every line a control's answer prints: one per member, then the count when there are several. */
export function controlLines(kind: ControlKind, answer: ControlResponse & { delivery?: Delivery }): string[] {
  const lines = answer.results.map((r) => memberLine(kind, r, answer.delivery));
  if (answer.results.length > 1) lines.push(countLine(kind, answer));
  return lines;
}

/**
 * A 409 of a control, prompt or spawn, said from the agent's view and its machine's tags read just
 * after: ended, ending (its sandbox is being closed; the view still shows its last state), draining,
 * or (resume) live but not paused, which is no failure: `nothing` is true then. Null when none of
 * these holds (the service's own message says it best).
 */
export function refusalWords(
  action: string,
  agent: Pick<AgentDetail, "agentId" | "state" | "outcome" | "draining">,
  tags: readonly string[],
): { text: string; nothing: boolean } | null {
  const id = agent.agentId;
  if (agent.state === "done" || agent.state === "aborted")
    return { text: `${id} already ended (${agent.outcome ?? agent.state}): nothing to ${action}`, nothing: false };
  if (tags.includes("ending"))
    return { text: `${id} is ending (its sandbox is being closed): nothing to ${action}`, nothing: false };
  if (action === "resume" && agent.state !== "paused")
    return { text: `${id} not paused: nothing to resume (it is ${agent.state})`, nothing: true };
  if (agent.draining)
    return {
      text: `${id} is draining: it takes no new prompt, steer or spawn, and ends once its turns settle`,
      nothing: false,
    };
  return null;
}
