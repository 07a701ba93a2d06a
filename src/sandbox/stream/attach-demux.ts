import { Readable } from "node:stream";

/** The longest stderr text kept before it is handed on; the supervisor writes whole lines, a longer one is cut. */
const MAX_STDERR_LINE = 8 * 1024;

/**
 * Split a Docker attach of a container without a TTY (8-byte headers: stream type, 3 zero bytes,
 * big-endian length) into its stdout, as a readable, and its stderr, handed to `onStderr` line by
 * line. Unlike dockerode's `modem.demuxStream`, it keeps backpressure: when stdout's reader stops
 * (the stream's mux stops reading a peer that does not read it, src/harness/mux/mux.ts), the
 * attach is paused, so what the engine sends is not buffered here without bound. stdout ends when
 * the attach does; a destroyed stdout destroys the attach.
 */
export function demuxAttach(attach: NodeJS.ReadableStream, onStderr: (line: string) => void): Readable {
  const raw = attach as Readable;
  let pending: Buffer = Buffer.alloc(0);
  let stderr = "";
  const stdout = new Readable({
    read: () => void raw.resume(),
    destroy: (err, done) => {
      raw.destroy?.();
      done(err);
    },
  });
  const toStderr = (text: string) => {
    const lines = (stderr + text).split("\n");
    stderr = lines.pop()!.slice(-MAX_STDERR_LINE);
    for (const line of lines) if (line.length > 0) onStderr(line.slice(0, MAX_STDERR_LINE));
  };
  raw.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let room = true;
    while (pending.length >= 8) {
      const length = pending.readUInt32BE(4);
      if (pending.length < 8 + length) break;
      const type = pending[0];
      const payload = pending.subarray(8, 8 + length);
      pending = pending.subarray(8 + length);
      if (type === 1) room = stdout.push(payload) && room;
      else if (type === 2) toStderr(payload.toString("utf8"));
    }
    if (!room) raw.pause();
  });
  const end = () => stdout.push(null);
  raw.on("end", end);
  raw.on("close", end);
  raw.on("error", (err) => stdout.destroy(err));
  return stdout;
}
