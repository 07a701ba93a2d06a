import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { demuxAttach } from "../../src/sandbox/stream/attach-demux.ts";

/** One frame of a Docker attach: stream type, three zero bytes, the length, the payload. */
function frame(type: 1 | 2, payload: string | Buffer): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

describe("demuxAttach", () => {
  it("splits stdout from stderr lines across chunk borders, and ends with the attach", async () => {
    const raw = new PassThrough();
    const lines: string[] = [];
    const stdout = demuxAttach(raw, (line) => lines.push(line));
    const chunks: Buffer[] = [];
    stdout.on("data", (d: Buffer) => chunks.push(d));
    const bytes = Buffer.concat([frame(1, "out one "), frame(2, "err a\nerr "), frame(1, "out two"), frame(2, "b\n")]);
    for (let i = 0; i < bytes.length; i += 5) raw.write(bytes.subarray(i, i + 5));
    raw.end();
    await new Promise((resolve) => stdout.once("end", resolve));
    assert.equal(Buffer.concat(chunks).toString(), "out one out two");
    assert.deepEqual(lines, ["err a", "err b"]);
  });

  it("pauses the attach while stdout's reader does not read, and resumes it when it does", async () => {
    const raw = new PassThrough();
    const stdout = demuxAttach(raw, () => undefined);
    const big = frame(1, Buffer.alloc(64 * 1024, 1));
    for (let i = 0; i < 4; i++) raw.write(big);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(raw.isPaused(), true);
    assert.ok(stdout.readableLength <= 2 * 64 * 1024, `${stdout.readableLength} bytes held`);
    let read = 0;
    stdout.on("data", (d: Buffer) => (read += d.length));
    raw.end();
    await new Promise((resolve) => stdout.once("end", resolve));
    assert.equal(read, 4 * 64 * 1024);
  });
});
