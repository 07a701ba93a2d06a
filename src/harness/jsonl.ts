import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** What the reader hands out: a complete line, or notice that an over-long line was discarded. */
export type JsonLine = { line: string } | { tooLong: number };

/**
 * Split a stream into JSON lines on LF only. Node's `readline` also splits on U+2028/U+2029,
 * which may sit inside JSON strings, so it cannot frame JSONL. A line longer than `maxBytes` is
 * dropped as it streams (memory stays bounded) and reported once with its length.
 */
export function readJsonLines(stream: Readable, maxBytes: number, onLine: (item: JsonLine) => void): () => void {
  const decoder = new StringDecoder("utf8");
  let buffer = "";
  let skipping = 0; // >0 while discarding the rest of an over-long line

  const onData = (chunk: Buffer | string) => {
    let text = typeof chunk === "string" ? chunk : decoder.write(chunk);
    while (text.length > 0) {
      const newline = text.indexOf("\n");
      if (skipping > 0) {
        if (newline === -1) {
          skipping += text.length;
          return;
        }
        onLine({ tooLong: skipping + newline });
        skipping = 0;
        text = text.slice(newline + 1);
        continue;
      }
      if (newline === -1) {
        buffer += text;
        if (buffer.length > maxBytes) {
          skipping = buffer.length;
          buffer = "";
        }
        return;
      }
      const line = buffer + text.slice(0, newline);
      buffer = "";
      text = text.slice(newline + 1);
      if (line.length > maxBytes) onLine({ tooLong: line.length });
      else onLine({ line: line.endsWith("\r") ? line.slice(0, -1) : line });
    }
  };
  stream.on("data", onData);
  return () => {
    stream.off("data", onData);
  };
}

/** Serialize one record as a JSON line. */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}
