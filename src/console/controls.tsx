import { useState } from "preact/hooks";
import type { ControlResponse, PermissionView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { api } from "./api.ts";

/** What the last control did: each member's result, or the API's error message. */
type Outcome = { label: string; error: string } | { label: string; results: ControlResponse["results"]; note?: string };

type Form = "steer" | "prompt" | "budget" | null;

/**
 * The controls of one agent: Pause, Resume, Stop (abort), Drain, Steer, Prompt and Raise budget,
 * each for the agent alone or, with Subtree pressed, for its subtree; the answer is shown under them.
 */
export function AgentControls({ record }: { record: AgentRecord }) {
  const [subtree, setSubtree] = useState(false);
  const [form, setForm] = useState<Form>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const scope = subtree ? "subtree" : "agent";
  const path = `/agents/${record.agentId}`;

  const act = async (label: string, call: () => Promise<Partial<ControlResponse> & { delivery?: string }>) => {
    setBusy(true);
    try {
      const answer = await call();
      setOutcome({ label, results: answer.results ?? [{ agentId: record.agentId, outcome: "applied" }], note: answer.delivery && `delivered as ${answer.delivery}` });
      setForm(null);
    } catch (err) {
      setOutcome({ label, error: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="controls">
      <button type="button" aria-pressed={subtree} class={subtree ? "toggle on" : "toggle"} onClick={() => setSubtree(!subtree)} title="Apply the controls to the agent and every agent under it">
        Subtree
      </button>
      <button type="button" disabled={busy} onClick={() => act("Pause", () => api("POST", `${path}/pause`, { scope }))}>
        Pause
      </button>
      <button type="button" disabled={busy} onClick={() => act("Resume", () => api("POST", `${path}/resume`, { scope }))}>
        Resume
      </button>
      <button type="button" disabled={busy} class="danger" onClick={() => act("Stop", () => api("POST", `${path}/stop`, { mode: "abort", scope }))}>
        Stop
      </button>
      <button type="button" disabled={busy} onClick={() => act("Drain", () => api("POST", `${path}/stop`, { mode: "drain", scope }))} title="Let running turns finish, then end">
        Drain
      </button>
      <button type="button" disabled={busy} aria-expanded={form === "steer"} onClick={() => setForm(form === "steer" ? null : "steer")}>
        Steer
      </button>
      <button type="button" disabled={busy} aria-expanded={form === "prompt"} onClick={() => setForm(form === "prompt" ? null : "prompt")}>
        Prompt
      </button>
      <button type="button" disabled={busy} aria-expanded={form === "budget"} onClick={() => setForm(form === "budget" ? null : "budget")}>
        Raise budget
      </button>
      {form === "steer" && <TextForm label={subtree ? "Steer message (to the agent, with its children's table)" : "Steer message"} busy={busy} onSend={(message) => act("Steer", () => api("POST", `${path}/steer`, { message, scope }))} />}
      {form === "prompt" && <TextForm label="Prompt (a new turn)" busy={busy} onSend={(text) => act("Prompt", async () => (await api("POST", `${path}/prompt`, { text }), {}))} />}
      {form === "budget" && <BudgetForm busy={busy} onSend={(caps) => act("Raise budget", async () => (await api("POST", `${path}/budget`, caps), {}))} />}
      {outcome && <OutcomeView outcome={outcome} />}
    </div>
  );
}

/** Allow or Deny (with an optional message the model is told) for one pending approval request. */
export function PermissionControls({ request }: { request: PermissionView }) {
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const decide = async (decision: "allow" | "deny") => {
    setBusy(true);
    try {
      await api("POST", `/agents/${request.agentId}/permissions/${request.requestId}`, decision === "deny" && message ? { decision, message } : { decision });
      setError(null);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="permission-controls">
      <button type="button" disabled={busy} onClick={() => decide("allow")}>
        Allow
      </button>
      <input aria-label="Deny message" placeholder="why (told to the model)" value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      <button type="button" disabled={busy} class="danger" onClick={() => decide("deny")}>
        Deny
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

function TextForm({ label, busy, onSend }: { label: string; busy: boolean; onSend: (text: string) => void }) {
  const [text, setText] = useState("");
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        onSend(text);
      }}
    >
      <textarea aria-label={label} placeholder={label} rows={2} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>
        Send
      </button>
    </form>
  );
}

/** New caps for the agent's subtree: an empty field keeps its cap, `none` lifts it. */
function BudgetForm({ busy, onSend }: { busy: boolean; onSend: (caps: Record<string, unknown>) => void }) {
  const [tokens, setTokens] = useState("");
  const [cost, setCost] = useState("");
  // What is not a number is sent as typed, so the API's 400 names the field (NaN would become null: a lift).
  const cap = (text: string) => (text.trim() === "none" ? null : /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text.trim());
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        const caps: Record<string, unknown> = {};
        if (tokens.trim()) caps.maxTokens = cap(tokens);
        if (cost.trim()) caps.maxCostUsd = cap(cost);
        onSend(caps);
      }}
    >
      <input aria-label="maxTokens" placeholder="maxTokens (or none)" value={tokens} onInput={(e) => setTokens(e.currentTarget.value)} />
      <input aria-label="maxCostUsd" placeholder="maxCostUsd (or none)" value={cost} onInput={(e) => setCost(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>
        Apply
      </button>
    </form>
  );
}

function OutcomeView({ outcome }: { outcome: Outcome }) {
  if ("error" in outcome)
    return (
      <p class="error" role="alert">
        {outcome.label}: {outcome.error}
      </p>
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
