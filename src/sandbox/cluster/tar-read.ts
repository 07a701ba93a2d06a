import type { Readable } from "node:stream";
import { extract, type Headers } from "tar-stream";

/** What to do after an entry: go on to the next one, or stop reading (the archive's stream is destroyed). */
export type TarStep = "next" | "stop";

/**
 * Walk a tar archive as it streams, entry by entry: `onEntry` may read the entry's content (or
 * leave it; what is left is skipped unread into memory), and answers whether to go on. Resolves
 * at the archive's end or at a `stop`; rejects when the archive, the parser or `onEntry` fails, or
 * the signal aborts, destroying the archive's stream (an engine's response: its request ends).
 */
export function walkTar(
  archive: NodeJS.ReadableStream,
  onEntry: (header: Headers, content: Readable) => Promise<TarStep>,
  signal: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const source = archive as Readable;
    const parser = extract();
    let settled = false;
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      if (err !== undefined) {
        source.unpipe?.(parser);
        source.destroy?.();
        parser.destroy();
        reject(err);
      } else resolve();
    };
    const onAbort = () => finish(signal.reason);
    if (signal.aborted) return finish(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    parser.on("entry", (header, content, next) => {
      let ended = false;
      content.once("end", () => {
        ended = true;
      });
      onEntry(header, content).then((step) => {
        if (settled) return;
        if (step === "stop") {
          settled = true;
          signal.removeEventListener("abort", onAbort);
          source.unpipe?.(parser);
          source.destroy?.();
          parser.destroy();
          resolve();
          return;
        }
        if (ended) next();
        else {
          content.once("end", () => next());
          content.resume();
        }
      }, finish);
    });
    parser.on("finish", () => finish());
    parser.on("error", (err) => finish(err));
    source.on("error", (err: Error) => finish(err));
    source.pipe(parser);
  });
}

/** An entry's content, whole: at most `maxBytes` (an `EFBIG` error past it, the content left unread). */
export async function readContent(content: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of content as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw Object.assign(new Error(`more than ${maxBytes} bytes`), { code: "EFBIG" });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
