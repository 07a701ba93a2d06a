import { useState } from "preact/hooks";
import type { ControlResponse, ForkResponse, PermissionView, SpendView } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { api } from "./api.ts";
import { ForkForm } from "./fork-form.tsx";
import { budgetText } from "./format.ts";
import type { Outcome } from "./outcome.tsx";

type Form = "steer" | "prompt" | "budget" | "fork" | null;
/** Stop and Drain wait for a second click that says how many agents they reach. */
type Confirming = { label: "Stop" | "Drain"; members: number } | null;

interface ControlsProps {
  record: AgentRecord;
  /** The agent and the live agents under it, parents first: who a subtree prompt goes to. */
  subtreeMembers: () => string[];
  /** Kept by the run's page, so the answer stays shown after the agent ends (a stop, a drain). */
  onOutcome: (outcome: Outcome) => void;
  /** Why the agent cannot be forked now (in a turn, draining, not started); null when it can. */
  forkBlocked: string | null;
}

/**
 * The controls of one agent, in its row's `Actions` menu: Pause, Resume, Stop (abort), Drain, Steer,
 * Prompt and Raise budget, each for the agent alone or, with Subtree pressed, for its subtree (a
 * budget always covers it); and Fork, of the agent alone, between turns. Stop and Drain ask first,
 * naming how many live agents they reach.
 */
export function AgentControls({ record, subtreeMembers, onOutcome, forkBlocked }: ControlsProps) {
  const [subtree, setSubtree] = useState(false);
  const [form, setForm] = useState<Form>(null);
  const [confirming, setConfirming] = useState<Confirming>(null);
  const [busy, setBusy] = useState(false);
  const scope = subtree ? "subtree" : "agent";
  const path = `/agents/${record.agentId}`;

  const act = async (label: string, call: () => Promise<Exclude<Outcome, { error: string }>>) => {
    setBusy(true);
    try {
      onOutcome(await call());
      setForm(null);
    } catch (err) {
      onOutcome({ label, error: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };
  const control = (label: string, route: string, body: object) =>
    act(label, async () => {
      const answer = await api<ControlResponse & { delivery?: string }>("POST", `${path}/${route}`, body);
      return { label, results: answer.results, note: answer.delivery && `delivered as ${answer.delivery}` };
    });
  // The API prompts one agent; a subtree prompt is one call per live member, each with its own answer.
  const prompt = (text: string) =>
    act("Prompt", async () => {
      const results: ControlResponse["results"] = [];
      for (const agentId of subtree ? subtreeMembers() : [record.agentId]) {
        try {
          await api("POST", `/agents/${agentId}/prompt`, { text });
          results.push({ agentId, outcome: "applied" });
        } catch (err) {
          results.push({ agentId, outcome: "failed", error: err instanceof Error ? err.message : String(err) });
        }
      }
      return { label: "Prompt", results };
    });
  const budget = (caps: Record<string, unknown>) =>
    act("Raise budget", async () => {
      const answer = await api<{ agentId: string; budget: SpendView }>("POST", `${path}/budget`, caps);
      return {
        label: "Raise budget",
        results: [{ agentId: answer.agentId, outcome: "applied" }],
        note: budgetText(answer.budget),
      };
    });
  // The agent alone, whatever Subtree says: a fork copies one agent's conversation and files.
  const fork = (prompts: string[]) =>
    act("Fork", async () => {
      const answer = await api<ForkResponse>("POST", `${path}/fork`, { prompts });
      return { label: "Fork", made: answer.agentIds, runId: record.runId };
    });
  const ask = (label: "Stop" | "Drain") => {
    setForm(null);
    setConfirming({ label, members: subtree ? subtreeMembers().length : 1 });
  };
  const confirm = () => {
    if (confirming === null) return;
    setConfirming(null);
    void control(confirming.label, "stop", { mode: confirming.label === "Stop" ? "abort" : "drain", scope });
  };
  const open = (next: Form) => {
    setConfirming(null);
    setForm(form === next ? null : next);
  };

  return (
    <fieldset class="controls" aria-label={`Actions for ${record.specName}`}>
      <div class="control-buttons">
        <button
          type="button"
          aria-pressed={subtree}
          class={subtree ? "toggle on" : "toggle"}
          onClick={() => {
            setSubtree(!subtree);
            setConfirming(null);
          }}
          title="Apply the controls to the agent and every agent under it"
        >
          Subtree
        </button>
        <button type="button" disabled={busy} onClick={() => control("Pause", "pause", { scope })}>
          Pause
        </button>
        <button type="button" disabled={busy} onClick={() => control("Resume", "resume", { scope })}>
          Resume
        </button>
        <button
          type="button"
          disabled={busy}
          class="danger"
          aria-expanded={confirming?.label === "Stop"}
          onClick={() => ask("Stop")}
        >
          Stop
        </button>
        <button
          type="button"
          disabled={busy}
          aria-expanded={confirming?.label === "Drain"}
          onClick={() => ask("Drain")}
          title="Let running turns finish, then end"
        >
          Drain
        </button>
        <button type="button" disabled={busy} aria-expanded={form === "steer"} onClick={() => open("steer")}>
          Steer
        </button>
        <button type="button" disabled={busy} aria-expanded={form === "prompt"} onClick={() => open("prompt")}>
          Prompt
        </button>
        <button type="button" disabled={busy} aria-expanded={form === "budget"} onClick={() => open("budget")}>
          Raise budget
        </button>
        <button
          type="button"
          disabled={busy || forkBlocked !== null}
          aria-expanded={form === "fork"}
          onClick={() => open("fork")}
          title={forkBlocked ?? "Copies of the agent, conversation and files, each given its own prompt"}
        >
          Fork
        </button>
      </div>
      {confirming && (
        <Confirm
          what={confirming}
          name={record.specName}
          subtree={subtree}
          onConfirm={confirm}
          onCancel={() => setConfirming(null)}
        />
      )}
      {form === "steer" && (
        <TextForm
          label={subtree ? "Steer message (to the agent, with its children's table)" : "Steer message"}
          busy={busy}
          onSend={(message) => control("Steer", "steer", { message, scope })}
        />
      )}
      {form === "prompt" && (
        <TextForm
          label={subtree ? "Prompt (a new turn for each live agent of the subtree)" : "Prompt (a new turn)"}
          busy={busy}
          onSend={prompt}
        />
      )}
      {form === "budget" && <BudgetForm busy={busy} onSend={budget} />}
      {form === "fork" && forkBlocked === null && <ForkForm busy={busy} onSend={fork} />}
    </fieldset>
  );
}

/** "Stop 12 live agents: worker and the 11 live agents under it?" with Confirm and Cancel. */
function Confirm({
  what,
  name,
  subtree,
  onConfirm,
  onCancel,
}: {
  what: NonNullable<Confirming>;
  name: string;
  subtree: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const below = what.members - 1;
  const reach = subtree
    ? `${what.members} live agent${what.members === 1 ? "" : "s"}: ${name}${below > 0 ? ` and the ${below} live agent${below === 1 ? "" : "s"} under it` : ", none live under it"}`
    : `1 agent: ${name} alone`;
  const effect =
    what.label === "Stop"
      ? "Running turns are aborted and sandboxes closed."
      : "Running turns finish; then each ends. Nothing new is taken.";
  return (
    <div class="confirm" role="alertdialog" aria-label={`Confirm ${what.label.toLowerCase()}`}>
      <span data-testid="confirm-text">
        {what.label} {reach}? {effect}
      </span>
      <button type="button" class={what.label === "Stop" ? "danger" : ""} onClick={onConfirm} autofocus>
        Confirm
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
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
      await api(
        "POST",
        `/agents/${request.agentId}/permissions/${request.requestId}`,
        decision === "deny" && message ? { decision, message } : { decision },
      );
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
      <input
        aria-label="Deny message"
        placeholder="why (told to the model)"
        value={message}
        onInput={(e) => setMessage(e.currentTarget.value)}
      />
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
      <textarea
        aria-label={label}
        placeholder={label}
        rows={2}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
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
  const cap = (text: string) =>
    text.trim() === "none" ? null : /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text.trim();
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
      <input
        aria-label="maxTokens"
        placeholder="maxTokens (or none)"
        value={tokens}
        onInput={(e) => setTokens(e.currentTarget.value)}
      />
      <input
        aria-label="maxCostUsd"
        placeholder="maxCostUsd (or none)"
        value={cost}
        onInput={(e) => setCost(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Apply
      </button>
    </form>
  );
}
