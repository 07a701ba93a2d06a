import { useEffect, useRef, useState } from "preact/hooks";
import { ACTIVITIES, type Activity, type RunTimeline, type TimelineSpan } from "../swarm-api.ts";
import type { Timeline } from "../views/run-timeline.ts";
import { api } from "./api.ts";
import { clock, duration } from "./format.ts";
import type { RunState } from "./run-state.ts";
import type { TreeRow } from "./tree-rows.ts";
import { useVirtualRows } from "./virtual-rows.ts";

const ROW_PX = 22;
/** The narrowest window a zoom goes to. */
const MIN_WINDOW_MS = 200;

const ACTIVITY_LABELS: Record<Activity, string> = {
  waiting: "waiting for inputs",
  provisioning: "provisioning",
  turn: "running a turn",
  idle: "idle",
  paused: "paused",
  hibernated: "hibernated",
  approval: "waiting for approval",
  draining: "draining",
};

interface TimelineProps {
  state: RunState;
  /** The tree's rows (its filter and folds apply here too). */
  rows: readonly TreeRow[];
  onLoaded: () => void;
}

/**
 * One bar per agent from its spawn to its end, coloured by what it was doing
 * (`GET /runs/:runId/timeline`, then kept current from the stream). The window fits the run until
 * zoomed: Zoom in and Zoom out halve and double it around its middle, Ctrl + wheel around the
 * pointer, dragging pans, Fit shows the whole run again.
 */
export function TimelineView({ state, rows, onLoaded }: TimelineProps) {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (state.timeline !== null) return;
    const stop = new AbortController();
    state.wantTimeline();
    api<RunTimeline>("GET", `/runs/${state.view.runId}/timeline`, undefined, stop.signal)
      .then((answer) => {
        state.setTimeline(answer);
        onLoaded();
      })
      .catch((err) => stop.signal.aborted || setError(err instanceof Error ? err.message : String(err)));
    return () => stop.abort();
  }, [state]);
  if (error !== null)
    return (
      <p class="error" role="alert">
        The timeline could not be read: {error}
      </p>
    );
  if (state.timeline === null) return <p class="muted">Reading the timeline…</p>;
  return <TimelineChart timeline={state.timeline} rows={rows} ended={state.ended()} />;
}

function TimelineChart({ timeline, rows, ended }: { timeline: Timeline; rows: readonly TreeRow[]; ended: boolean }) {
  const [zoom, setZoom] = useState<{ from: number; to: number } | null>(null);
  const [now, setNow] = useState(Date.now());
  const bars = useRef<HTMLDivElement>(null);
  const drag = useRef<{ x: number; from: number; to: number } | null>(null);
  const list = useVirtualRows(
    rows.map((row) => row.record.agentId),
    ROW_PX,
    true,
  );
  // Open spans grow with the clock while something lives.
  useEffect(() => {
    if (ended) return;
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [ended]);

  // The whole run: from the first spawn to the last end, or to now while an agent lives.
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const agent of timeline.agents.values()) {
    const spans = agent.spans;
    if (spans.length === 0) continue;
    first = Math.min(first, spans[0]?.from ?? first);
    last = Math.max(last, spans.at(-1)?.to ?? Math.max(now, spans.at(-1)?.from ?? 0));
  }
  if (!Number.isFinite(first)) first = last = now;
  const whole = { from: first, to: Math.max(last, first + MIN_WINDOW_MS) };
  const view = zoom ?? whole;
  const span = view.to - view.from;

  const zoomAround = (factor: number, at = 0.5) => {
    const width = Math.max(MIN_WINDOW_MS, span * factor);
    const center = view.from + span * at;
    const from = center - width * at;
    if (width >= whole.to - whole.from) return setZoom(null);
    setZoom({ from, to: from + width });
  };
  const onWheel = (event: WheelEvent) => {
    if (!event.ctrlKey || bars.current === null) return;
    event.preventDefault();
    const box = bars.current.getBoundingClientRect();
    zoomAround(event.deltaY < 0 ? 0.5 : 2, Math.min(1, Math.max(0, (event.clientX - box.left) / box.width)));
  };
  const onPointerDown = (event: PointerEvent) => {
    if (zoom === null) return;
    drag.current = { x: event.clientX, ...view };
    (event.currentTarget as HTMLElement).setPointerCapture(event.pointerId);
  };
  const onPointerMove = (event: PointerEvent) => {
    const start = drag.current;
    if (start === null || bars.current === null) return;
    const shift = ((start.x - event.clientX) / bars.current.clientWidth) * (start.to - start.from);
    setZoom({ from: start.from + shift, to: start.to + shift });
  };

  return (
    <section class="timeline" aria-label="Timeline">
      <div class="timeline-head">
        <button type="button" onClick={() => zoomAround(0.5)} disabled={span <= MIN_WINDOW_MS}>
          Zoom in
        </button>
        <button type="button" onClick={() => zoomAround(2)} disabled={zoom === null}>
          Zoom out
        </button>
        <button type="button" onClick={() => setZoom(null)} disabled={zoom === null}>
          Fit
        </button>
        <span class="muted" data-testid="timeline-window">
          {clock(view.from)} – {clock(view.to)} ({duration(span)})
        </span>
        <ul class="legend">
          {ACTIVITIES.map((activity) => (
            <li key={activity}>
              <span class={`swatch act-${activity}`} /> {ACTIVITY_LABELS[activity]}
            </li>
          ))}
        </ul>
      </div>
      <div class="timeline-axis" aria-hidden="true">
        <span />
        <span class="timeline-ticks">
          {[0, 0.25, 0.5, 0.75].map((at) => (
            <span key={at} class="tick" style={{ left: `${at * 100}%` }}>
              {clock(view.from + span * at)}
            </span>
          ))}
        </span>
      </div>
      <div class="tree-scroll timeline-scroll" ref={list.scroller} onScroll={list.onScroll}>
        <div class="tree-sizer" style={{ height: `${list.height}px` }}>
          <div
            class="timeline-rows"
            style={{ transform: `translateY(${list.top}px)` }}
            ref={bars}
            onWheel={onWheel}
            onPointerDown={onPointerDown}
            onPointerMove={onPointerMove}
            onPointerUp={() => (drag.current = null)}
          >
            {rows.slice(list.start, list.end).map(({ record, depth, context }) => (
              <div
                key={record.agentId}
                class={`timeline-row${context ? " context" : ""}`}
                data-vkey={record.agentId}
                data-agent-id={record.agentId}
              >
                <span class="timeline-name" style={{ paddingLeft: `${depth * 0.75}rem` }} title={record.agentId}>
                  {record.specName}
                </span>
                <span class="timeline-bar">
                  {(timeline.agents.get(record.agentId)?.spans ?? []).map((s, i) => (
                    <Span key={i} span={s} from={view.from} width={span} now={now} />
                  ))}
                </span>
              </div>
            ))}
          </div>
        </div>
      </div>
    </section>
  );
}

/** One stretch of one activity, placed in the window (nothing when outside it). */
function Span({ span, from, width, now }: { span: TimelineSpan; from: number; width: number; now: number }) {
  const end = span.to ?? Math.max(now, span.from);
  const left = Math.max(span.from, from);
  const right = Math.min(end, from + width);
  if (right < left || end < from || span.from > from + width) return null;
  return (
    <span
      class={`span act-${span.activity}`}
      data-activity={span.activity}
      style={{ left: `${((left - from) / width) * 100}%`, width: `${((right - left) / width) * 100}%` }}
      title={`${ACTIVITY_LABELS[span.activity]}: ${clock(span.from)} – ${span.to === null ? "now" : clock(span.to)} (${duration(end - span.from)})`}
    />
  );
}
