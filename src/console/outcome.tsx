import type { ControlResponse } from "../swarm-api.ts";
import { runHref } from "./route.ts";

/** What the last control on an agent did: each member's result, the children a fork made, or the API's error message. */
export type Outcome =
  | { label: string; error: string }
  | { label: string; results: ControlResponse["results"]; note?: string }
  | { label: string; made: string[]; runId: string };

/** A control's answer under its row: each member's result, the children a fork made (links), or the API's message. */
export function OutcomeView({ outcome }: { outcome: Outcome }) {
  if ("error" in outcome)
    return (
      <p class="error" role="alert">
        {outcome.label}: {outcome.error}
      </p>
    );
  if ("made" in outcome)
    return (
      <div class="results" role="status" aria-label={`${outcome.label} results`}>
        {outcome.label}: {outcome.made.length} {outcome.made.length === 1 ? "child" : "children"}
        <ul>
          {outcome.made.map((agentId) => (
            <li key={agentId} class="result-applied">
              <a class="mono" href={runHref(outcome.runId, agentId)}>
                {agentId}
              </a>{" "}
              forked
            </li>
          ))}
        </ul>
      </div>
    );
  return (
    <div class="results" role="status" aria-label={`${outcome.label} results`}>
      {outcome.label}
      {outcome.note && <span class="muted"> ({outcome.note})</span>}:
      <ul>
        {outcome.results.map((member) => (
          <li key={member.agentId} class={`result-${member.outcome}`}>
            <span class="mono">{member.agentId}</span> {member.outcome}
            {member.error && <span class="error">: {member.error}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** What `OutcomeView` shows of an outcome: a row draws again when it changed. */
export const outcomeKey = (outcome: Outcome): string =>
  "error" in outcome
    ? `${outcome.label}:${outcome.error}`
    : "made" in outcome
      ? `${outcome.label}:${outcome.made.join(",")}`
      : `${outcome.label}:${outcome.note ?? ""}:${outcome.results.map((r) => `${r.agentId}=${r.outcome}`).join(",")}`;
