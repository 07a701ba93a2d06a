import { useEffect, useMemo, useReducer, useState } from "preact/hooks";
import type { PermissionView, RunSnapshot } from "../swarm-api.ts";
import { AgentPanel } from "./agent-panel.tsx";
import { AgentTree } from "./agent-tree.tsx";
import { ApiError, api, savedToken, tokenRefused } from "./api.ts";
import { EventLog } from "./event-log.tsx";
import { followRun, type StreamStatus } from "./event-stream.ts";
import { adoptBlocked } from "./forks.ts";
import { usageText } from "./format.ts";
import type { Outcome } from "./outcome.tsx";
import { RunState } from "./run-state.ts";
import { TimelineView } from "./timeline-view.tsx";
import { filtering, NO_FILTER, parents, type TreeFilter, treeRows } from "./tree-rows.ts";
import { TreeToolbar } from "./tree-toolbar.tsx";

/** Waits between tries to read the snapshot, growing to the last. */
const RETRY_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * One run, live: the spawn tree (or its timeline), the selected agent and the event log. The page
 * opens from the run's snapshot (`GET /runs/:runId` and its pending approvals), then follows the
 * event stream after the snapshot's `asOf` (after a drop, after the last seq it received), so a run
 * of 1,000 agents and 70,000 events opens as fast as a small one. Bursts of events are drawn once
 * per frame.
 */
export function RunPage({ runId, selected }: { runId: string; selected: string | null }) {
  const state = useMemo(() => new RunState(runId), [runId]);
  const outcomes = useMemo(() => new Map<string, Outcome>(), [runId]);
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const [status, setStatus] = useState<StreamStatus>({ state: "connecting", attempt: 0 });
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const [filter, setFilter] = useState<TreeFilter>(NO_FILTER);
  const [menu, setMenu] = useState<string | null>(null);
  const [tab, setTab] = useState<"tree" | "timeline">("tree");

  useEffect(() => {
    let frame = 0;
    const schedule = () => {
      if (frame !== 0) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        redraw(0);
      });
    };
    const closed = new AbortController();
    // Followed while the tab is shown: a hidden tab holds no connection (a browser allows six per
    // host) and catches up with Last-Event-ID when shown again.
    let following: AbortController | null = null;
    const follow = () => {
      if (following !== null || !state.loaded || closed.signal.aborted) return;
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
    const open = async () => {
      for (let attempt = 0; !closed.signal.aborted; attempt++) {
        try {
          const snapshot = await api<RunSnapshot>("GET", `/runs/${runId}`, undefined, closed.signal);
          const { permissions } = await api<{ permissions: PermissionView[] }>(
            "GET",
            `/runs/${runId}/permissions`,
            undefined,
            closed.signal,
          );
          if (closed.signal.aborted) return;
          state.load(snapshot, permissions);
          redraw(0);
          return shown();
        } catch (err) {
          if (closed.signal.aborted) return;
          const error = err instanceof Error ? err.message : String(err);
          // A refusal (the run is unknown, the token wrong) is final; the daemon not answering is not.
          if (err instanceof ApiError && err.status >= 400 && err.status < 500)
            return setStatus({ state: "refused", status: err.status, error });
          setStatus({ state: "reconnecting", attempt: attempt + 1, error });
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]));
        }
      }
    };
    document.addEventListener("visibilitychange", shown);
    void open();
    return () => {
      closed.abort();
      document.removeEventListener("visibilitychange", shown);
      following?.abort();
      cancelAnimationFrame(frame);
    };
  }, [runId]);

  state.watch(selected);
  const gone = status.state === "refused" && status.status === 404;
  const onOutcome = (agentId: string, outcome: Outcome) => {
    outcomes.set(agentId, outcome);
    redraw(0);
  };
  // From the newest set: a row drawn earlier may call it.
  const toggle = (agentId: string) =>
    setCollapsed((previous) => {
      const next = new Set(previous);
      if (!next.delete(agentId)) next.add(agentId);
      return next;
    });
  // The rows change with the tree's shape, the folds and the filter; a filter also with every fold.
  const rows = useMemo(
    () => treeRows(state.view, collapsed, filter),
    [state.view, state.view.agents.size, collapsed, filter, filtering(filter) ? state.folded : 0],
  );
  const root = state.agent(state.view.rootAgentId);
  const open = selected === null ? undefined : state.agent(selected);
  const forkParent = open?.forkedFrom ? state.agent(open.forkedFrom.agentId) : undefined;
  const pending = state.pendingPermissions().length;
  return (
    <main class="run-page">
      <div class="run-head">
        <h1>
          <span class="mono">{runId}</span> {root && <span class="muted">{root.specName}</span>}
        </h1>
        <StreamBadge status={status} ended={state.ended()} />
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
          The run could not be read: {status.error}
          {gone && " The run was deleted or purged: nothing of it can be controlled."}
        </p>
      )}
      <div class="run-body">
        <section class="tree-pane" aria-label="Spawn tree">
          <div class="pane-head">
            <div class="tabs" role="tablist" aria-label="View">
              <button type="button" role="tab" aria-selected={tab === "tree"} onClick={() => setTab("tree")}>
                Tree
              </button>
              <button type="button" role="tab" aria-selected={tab === "timeline"} onClick={() => setTab("timeline")}>
                Timeline
              </button>
            </div>
            <TreeToolbar
              filter={filter}
              onFilter={setFilter}
              onCollapseAll={() => setCollapsed(new Set(parents(state.view)))}
              onExpandAll={() => setCollapsed(new Set())}
              shown={rows.filter((row) => !row.context).length}
              total={state.view.agents.size}
              filtering={filtering(filter)}
            />
          </div>
          {!state.loaded ? (
            <p class="muted">Reading the run…</p>
          ) : !root ? (
            <p class="muted">Waiting for the run's first event…</p>
          ) : tab === "tree" ? (
            <AgentTree
              state={state}
              rows={rows}
              selected={selected}
              outcomes={outcomes}
              onOutcome={onOutcome}
              gone={gone}
              onToggle={toggle}
              menu={menu}
              onMenu={setMenu}
            />
          ) : (
            <TimelineView state={state} rows={rows} onLoaded={() => redraw(0)} />
          )}
        </section>
        <aside class="panel-pane" aria-label="Agent">
          {open ? (
            <AgentPanel
              key={open.agentId}
              record={open}
              output={state.output}
              parent={forkParent}
              adoptBlocked={
                open.forkedFrom ? adoptBlocked(forkParent, state.betweenTurns(open.forkedFrom.agentId)) : null
              }
            />
          ) : (
            <p class="muted">Select an agent to see its prompt, result, live output, stats and machine.</p>
          )}
        </aside>
      </div>
      <EventLog state={state} />
    </main>
  );
}

function StreamBadge({ status, ended }: { status: StreamStatus; ended: boolean }) {
  switch (status.state) {
    case "live":
      // The stream stays open after the run's end (spec section 6), but nothing more will happen in it.
      return ended ? (
        <span class="badge" role="status" title="Every agent has ended; the stream stays open">
          ended
        </span>
      ) : (
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
          refused ({status.status})
        </span>
      );
  }
}
