import type { RefObject } from "preact";
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";

/** Drawn beyond the visible part, above and below, so a quick scroll shows rows rather than blank. */
const OVERSCAN_PX = 600;

export interface VirtualRows {
  /** The scrolling element: give it a height and `overflow: auto`. */
  scroller: RefObject<HTMLDivElement | null>;
  onScroll: () => void;
  /** Rows `[start, end)` are drawn, the first `top` pixels below the start of the list. */
  start: number;
  end: number;
  top: number;
  /** The list's whole height. */
  height: number;
  /** Scrolls the row of `key` into the middle of the view, unless it is in view already. */
  scrollTo: (key: string) => void;
}

/**
 * Draws only the rows in view of a long list (the spawn tree of 1,000 agents, the event log). Rows
 * may differ in height (an approval, a control's answer): each drawn row carries `data-vkey` and
 * is measured after it is drawn; rows not yet drawn count as `estimate` pixels. With `fixed`, every
 * row is `estimate` pixels high and nothing is measured.
 */
export function useVirtualRows(keys: readonly string[], estimate: number, fixed = false): VirtualRows {
  const scroller = useRef<HTMLDivElement>(null);
  const heights = useRef(new Map<string, number>());
  const [view, setView] = useState({ top: 0, height: 800 });
  const [, remeasured] = useReducer((n: number) => n + 1, 0);

  let start = -1;
  let end = keys.length;
  let top = 0;
  let height = 0;
  const from = view.top - OVERSCAN_PX;
  const to = view.top + view.height + OVERSCAN_PX;
  if (fixed) {
    start = Math.min(keys.length, Math.max(0, Math.floor(from / estimate)));
    end = Math.min(keys.length, Math.max(start, Math.ceil(to / estimate)));
    top = start * estimate;
    height = keys.length * estimate;
  }
  for (let i = 0; i < (fixed ? 0 : keys.length); i++) {
    const h = heights.current.get(keys[i] as string) ?? estimate;
    if (start < 0 && height + h > from) {
      start = i;
      top = height;
    }
    if (end === keys.length && height > to) end = i;
    height += h;
  }
  if (start < 0) start = end = keys.length;

  const read = () => {
    const element = scroller.current;
    if (element) setView({ top: element.scrollTop, height: element.clientHeight });
  };
  useEffect(() => {
    const element = scroller.current;
    if (!element) return;
    read();
    const observer = new ResizeObserver(read);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  // Rows are measured as the browser lays them out (a ResizeObserver: no layout forced per draw);
  // a row whose height is not the one counted is counted again.
  const observer = useRef<ResizeObserver | null>(null);
  const observed = useRef(new Set<Element>());
  const measure = () =>
    new ResizeObserver((entries) => {
      let changed = false;
      for (const entry of entries) {
        const key = (entry.target as HTMLElement).dataset.vkey;
        const h = entry.borderBoxSize[0]?.blockSize ?? 0;
        if (key !== undefined && h > 0 && heights.current.get(key) !== h) {
          heights.current.set(key, h);
          changed = true;
        }
      }
      if (changed) remeasured(0);
    });
  useEffect(() => () => observer.current?.disconnect(), []);
  useLayoutEffect(() => {
    if (fixed) return;
    observer.current ??= measure();
    const sizes = observer.current;
    for (const row of observed.current)
      if (!row.isConnected) {
        sizes.unobserve(row);
        observed.current.delete(row);
      }
    for (const row of scroller.current?.querySelectorAll("[data-vkey]") ?? [])
      if (!observed.current.has(row)) {
        observed.current.add(row);
        sizes.observe(row, { box: "border-box" });
      }
  });

  const scrollTo = (key: string) => {
    const element = scroller.current;
    const index = keys.indexOf(key);
    if (!element || index < 0) return;
    let offset = fixed ? index * estimate : 0;
    for (let i = 0; i < (fixed ? 0 : index); i++) offset += heights.current.get(keys[i] as string) ?? estimate;
    const h = heights.current.get(key) ?? estimate;
    if (offset >= element.scrollTop && offset + h <= element.scrollTop + element.clientHeight) return;
    element.scrollTop = Math.max(0, offset - element.clientHeight / 2);
    read();
  };
  return { scroller, onScroll: read, start, end, top, height, scrollTo };
}
