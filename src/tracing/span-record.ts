/** An attribute value as spans carry it. */
export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

/** A point in time on a span (an approval, a pause, a steer, ...): a ledger event's type, time and facts. */
export interface SpanEventRecord {
  name: string;
  at: number;
  attributes: Attributes;
}

/**
 * One finished span, built from ledger facts only and handed to the exporter at once: times are
 * the ledger's (epoch milliseconds), ids come from `trace-ids.ts`. Plain data, so the fold that
 * makes it is tested without the SDK.
 */
export interface SpanRecord {
  name: string;
  kind: "client" | "internal";
  traceId: string;
  spanId: string;
  /** Absent on a trace's root (the run's span). */
  parentSpanId?: string;
  startAt: number;
  endAt: number;
  attributes: Attributes;
  events: SpanEventRecord[];
  /** Events left out beyond the span's limit (the oldest are dropped). */
  droppedEvents: number;
  links: { traceId: string; spanId: string; attributes: Attributes }[];
  status: { code: "ok" | "error" | "unset"; message?: string };
}
