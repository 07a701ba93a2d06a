import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import type { HarnessEventMessage } from "./protocol.ts";

/**
 * The harness's append-only event log (`events.jsonl` in the control folder). Every event gets the
 * next `hseq`, gap-free from 1, and is written before it is sent, so a client that reconnects with
 * `after: N` can be given exactly the events after N. Writes are synchronous: a replay read and the
 * switch to live delivery then happen with no event slipping in between.
 */
export interface EventLog {
  readonly lastHseq: number;
  /** Log the event under the next hseq; returns its JSON line (LF-terminated), ready to send. */
  append(event: Omit<HarnessEventMessage, "type" | "hseq">): string;
  /** The logged events with `hseq > after`, as raw JSON lines (each ending in LF). */
  linesAfter(after: number): string;
  close(): void;
}

/** The log line (and wire line) of the event numbered `hseq`: one JSON object and a newline. */
export function eventLine(hseq: number, event: Omit<HarnessEventMessage, "type" | "hseq">): string {
  const message: HarnessEventMessage = { type: "event", hseq, ...event };
  return `${JSON.stringify(message)}\n`;
}

export function openEventLog(path: string): EventLog {
  const fd = openSync(path, "a+");
  // Byte offset of each event's line; offsets[i] is where hseq i+1 starts.
  const offsets: number[] = [];
  let size = 0;
  const text = readAll(fd);
  // A crash mid-write can leave a torn last line: drop it so the next event starts a clean line.
  const complete = text.slice(0, text.lastIndexOf("\n") + 1);
  if (complete.length !== text.length) ftruncateSync(fd, Buffer.byteLength(complete));
  for (const line of complete.split("\n")) {
    if (line.length === 0) continue;
    offsets.push(size);
    size += Buffer.byteLength(line) + 1;
  }

  return {
    get lastHseq() {
      return offsets.length;
    },
    append(event) {
      const line = eventLine(offsets.length + 1, event);
      const bytes = Buffer.from(line);
      writeSync(fd, bytes);
      offsets.push(size);
      size += bytes.length;
      return line;
    },
    linesAfter(after) {
      const from = Math.max(0, Math.floor(after));
      if (from >= offsets.length) return "";
      const start = offsets[from] ?? size;
      const buffer = Buffer.alloc(size - start);
      readSync(fd, buffer, 0, buffer.length, start);
      return buffer.toString("utf8");
    },
    close() {
      closeSync(fd);
    },
  };
}

function readAll(fd: number): string {
  const { size } = fstatSync(fd);
  const buffer = Buffer.alloc(size);
  readSync(fd, buffer, 0, size, 0);
  return buffer.toString("utf8");
}
