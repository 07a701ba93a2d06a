import { SwarmError } from "../errors.ts";
import type { IndexChanges, IndexPut, LedgerEvent, NewEvent } from "./ledger.ts";
import { isValidRunId } from "./ledger-keys.ts";
import { storedEventJson } from "./stored-event.ts";

/** An event validated and serialised at call time, waiting for its seq. */
export interface PreparedEvent {
  type: string;
  agentId: string | null;
  at: number | undefined;
  dataJson: string;
}

/** One `append` call waiting in the writer's group. */
export interface AppendRequest {
  runId: string;
  events: PreparedEvent[];
  put: IndexPut[];
  del: string[];
  /** `performance.now()` at the `append` call: where its latency is measured from. */
  queuedAt: number;
  resolve: (events: LedgerEvent[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Validate and serialise an append now, so a bad call fails alone instead of failing the whole
 * group it would have been committed with, and so later mutation of `data` cannot change it.
 */
export function prepareAppend(
  runId: string,
  events: NewEvent[],
  index: IndexChanges | undefined,
): Omit<AppendRequest, "resolve" | "reject"> {
  if (typeof runId !== "string" || !isValidRunId(runId))
    throw invalid(`run id ${JSON.stringify(runId)} is empty or contains "!"`);
  const prepared = events.map((e, i) => prepareEvent(e, i));
  const put = index?.put ?? [];
  const del = index?.del ?? [];
  for (const p of put) {
    if (typeof p.key !== "string" || p.key === "" || typeof p.value !== "string")
      throw invalid("index puts need a non-empty string key and a string value");
  }
  for (const k of del) {
    if (typeof k !== "string" || k === "") throw invalid("index deletes need a non-empty string key");
  }
  return { runId, events: prepared, put: [...put], del: [...del], queuedAt: performance.now() };
}

/**
 * The stored JSON of an event (`storedEventJson`) and the event as a later `read` will return it.
 * `data` is serialised once; parsed back so live listeners and the caller see exactly what a
 * replay sees.
 */
export function storeEvent(
  runId: string,
  seq: number,
  e: PreparedEvent,
  commitAt: number,
): { value: string; event: LedgerEvent } {
  const at = e.at ?? commitAt;
  const value = storedEventJson(runId, seq, e.type, e.agentId, at, e.dataJson);
  return { value, event: JSON.parse(value) as LedgerEvent };
}

function prepareEvent(e: NewEvent, i: number): PreparedEvent {
  if (typeof e.type !== "string" || e.type === "") throw invalid(`event ${i}: type must be a non-empty string`);
  if (e.agentId !== null && typeof e.agentId !== "string")
    throw invalid(`event ${i}: agentId must be a string or null`);
  if (e.at !== undefined && !Number.isFinite(e.at)) throw invalid(`event ${i}: at must be a finite number`);
  if (typeof e.data !== "object" || e.data === null || Array.isArray(e.data))
    throw invalid(`event ${i}: data must be an object`);
  let dataJson: string | undefined;
  try {
    dataJson = JSON.stringify(e.data);
  } catch (cause) {
    throw invalid(`event ${i}: data is not serialisable`, cause);
  }
  // A toJSON could turn the object into something else; the stored form must stay an object.
  if (dataJson === undefined || !dataJson.startsWith("{"))
    throw invalid(`event ${i}: data must serialise to a JSON object`);
  return { type: e.type, agentId: e.agentId, at: e.at, dataJson };
}

function invalid(message: string, cause?: unknown): SwarmError {
  return new SwarmError("INTERNAL", `invalid ledger append: ${message}`, { cause });
}
