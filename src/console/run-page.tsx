import { useEffect, useMemo, useReducer, useState } from "preact/hooks";
import { AgentPanel } from "./agent-panel.tsx";
import { AgentTree } from "./agent-tree.tsx";
import { savedToken, tokenRefused } from "./api.ts";
import type { Outcome } from "./controls.tsx";
import { EventLog } from "./event-log.tsx";
import { followRun, type StreamStatus } from "./event-stream.ts";
import { usageText } from "./format.ts";
import { RunState } from "./run-state.ts";

/**
 * One run, live: the spawn tree, the selected agent and the event log, all fed by the run's event
 * stream (from its first event, then live; after a drop it resumes after the last seq it folded).
 * Bursts of events are drawn once per frame.
 */
export function RunPage({ runId, selected }: { runId: string; selected: string | null }) {
  const state = useMemo(() => new RunState(runId), [runId]);
  const outcomes = useMemo(() => new Map<string, Outcome>(), [runId]);
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const [status, setStatus] = useState<StreamStatus>({ state: "connecting", attempt: 0 });

  useEffect(() => {
    let frame = 0;
    const schedule = () => {
      if (frame !== 0) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        redraw(0);
      });
    };
    // Followed while the tab is shown: a hidden tab holds no connection (a browser allows six per
    // host) and catches up with Last-Event-ID when shown again.
    let following: AbortController | null = null;
    const follow = () => {
      if (following !== null) return;
      const stop = new AbortController();
      following = stop;
      void followRun({
        base: "",
        runId,
        token: savedToken(),
        lastEventId: () => state.lastSeq,
        onMessage: (message) => {
          state.apply(message);
          schedule();
        },
        onStatus: (next) => {
          if (stop.signal.aborted) return;
          if (next.state === "refused" && next.status === 401) tokenRefused();
          setStatus(next);
        },
        signal: stop.signal,
      });
    };
    const shown = () => {
      if (!document.hidden) return follow();
      following?.abort();
      following = null;
    };
    document.addEventListener("visibilitychange", shown);
    shown();
    return () => {
      document.removeEventListener("visibilitychange", shown);
      following?.abort();
      cancelAnimationFrame(frame);
    };
  }, [runId]);

  const gone = status.state === "refused" && status.status === 404;
  const onOutcome = (agentId: string, outcome: Outcome) => {
    outcomes.set(agentId, outcome);
    redraw(0);
  };
  const root = state.agent(state.view.rootAgentId);
  const open = selected === null ? undefined : state.agent(selected);
  const pending = state.pendingPermissions().length;
  return (
    <main class="run-page">
      <div class="run-head">
        <h1>
          <span class="mono">{runId}</span> {root && <span class="muted">{root.specName}</span>}
        </h1>
        <StreamBadge status={status} />
        <span class="muted" data-testid="stream-position">
          {state.received} events · last seq {state.lastSeq}
        </span>
        {usageText(state.view.usage) && <span class="muted">{usageText(state.view.usage)}</span>}
        {pending > 0 && (
          <span class="badge attention">{pending === 1 ? "1 approval pending" : `${pending} approvals pending`}</span>
        )}
      </div>
      {status.state === "refused" && (
        <p class="error" role="alert">
          The event stream was refused: {status.error}
          {gone && " The run was deleted or purged: nothing of it can be controlled."}
        </p>
      )}
      <div class="run-body">
        <section class="tree-pane" aria-label="Spawn tree">
          {root ? (
            <AgentTree state={state} selected={selected} outcomes={outcomes} onOutcome={onOutcome} gone={gone} />
          ) : (
            <p class="muted">Waiting for the run's first event…</p>
          )}
        </section>
        <aside class="panel-pane" aria-label="Agent">
          {open ? (
            <AgentPanel key={open.agentId} record={open} />
          ) : (
            <p class="muted">Select an agent to see its prompt, result, stats and machine.</p>
          )}
        </aside>
      </div>
      <EventLog state={state} />
    </main>
  );
}

function StreamBadge({ status }: { status: StreamStatus }) {
  switch (status.state) {
    case "live":
      return (
        <span class="badge live" role="status">
          live
        </span>
      );
    case "connecting":
      return (
        <span class="badge" role="status">
          connecting…
        </span>
      );
    case "reconnecting":
      return (
        <span class="badge attention" role="status" title={status.error}>
          reconnecting (attempt {status.attempt}): {status.error}
        </span>
      );
    case "refused":
      return (
        <span class="badge failed" role="status">
          stream refused ({status.status})
        </span>
      );
  }
}
