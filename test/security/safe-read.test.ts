import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readControlFile, readControlFileSync, tailControlFile } from "../../src/sandbox/safe-read.ts";
import { waitForHarness } from "../../src/sandbox/wait-for-harness.ts";

const dir = mkdtempSync(join(tmpdir(), "swarmd-safe-read-"));
const secret = join(dir, "host-secret");
writeFileSync(secret, "root:HOST-SECRET-HASH:19000:0:99999:7:::\n");
const fifo = join(dir, "fifo");
execFileSync("mkfifo", [fifo]);
const link = join(dir, "link");
symlinkSync(secret, link);

/** Rejects when `promise` takes longer than `ms`: a FIFO that blocks the opener shows as a timeout. */
const within = <T>(promise: Promise<T>, ms = 2_000) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still blocked after ${ms} ms`)), ms).unref()),
  ]);

describe("reading files a sandbox can reach", () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads a regular file whole, and its tail", async () => {
    const file = join(dir, "plain");
    writeFileSync(file, "0123456789");
    assert.equal((await readControlFile(file, 10)).toString(), "0123456789");
    assert.equal((await tailControlFile(file, 4)).toString(), "6789");
  });

  it("refuses a file over the cap", async () => {
    const file = join(dir, "large");
    writeFileSync(file, "x".repeat(1000));
    await assert.rejects(readControlFile(file, 999), { code: "EFBIG" });
    assert.equal((await tailControlFile(file, 10)).length, 10);
  });

  it("never follows a symlink to a host file", async () => {
    await assert.rejects(within(readControlFile(link, 1 << 20)), { code: "ELOOP" });
    await assert.rejects(within(tailControlFile(link, 1 << 20)), { code: "ELOOP" });
  });

  it("never blocks on a FIFO, and reads no device or folder", async () => {
    await assert.rejects(within(readControlFile(fifo, 1 << 20)), { code: "ENOTREG" });
    await assert.rejects(within(tailControlFile(fifo, 1 << 20)), { code: "ENOTREG" });
    await assert.rejects(within(readControlFile("/dev/zero", 1 << 20)), { code: "ENOTREG" });
    await assert.rejects(within(readControlFile(dir, 1 << 20)), { code: "ENOTREG" });
    await assert.rejects(readControlFile(join(dir, "missing"), 10), { code: "ENOENT" });
  });

  it("reads the same way in one turn of the event loop (a control's record): no link, no FIFO, no more than the cap", () => {
    const file = join(dir, "plain-sync");
    writeFileSync(file, "0123456789");
    assert.equal(readControlFileSync(file, 10).toString(), "0123456789");
    assert.throws(() => readControlFileSync(file, 9), { code: "EFBIG" });
    assert.throws(() => readControlFileSync(link, 1 << 20), { code: "ELOOP" });
    // Would block this whole test process, not time out, if the open waited for a writer.
    assert.throws(() => readControlFileSync(fifo, 1 << 20), { code: "ENOTREG" });
    assert.throws(() => readControlFileSync("/dev/zero", 1 << 20), { code: "ENOTREG" });
    assert.throws(() => readControlFileSync(dir, 1 << 20), { code: "ENOTREG" });
    assert.throws(() => readControlFileSync(join(dir, "missing"), 10), { code: "ENOENT" });
  });

  it("a failed harness start quotes no symlinked host file and does not hang on a FIFO as its output", async () => {
    for (const outputFile of [link, fifo]) {
      const started = waitForHarness(join(dir, "no.sock"), {
        outputFile,
        exited: () => "exited with code 1",
        timeoutMs: 5_000,
        signal: AbortSignal.timeout(30_000),
      });
      const err = await within(
        started.then(
          () => undefined,
          (e: unknown) => e as Error,
        ),
        10_000,
      );
      assert.ok(err instanceof Error);
      assert.match(err.message, /harness output:\n\(none\)/);
      assert.doesNotMatch(err.message, /HOST-SECRET/);
    }
  });
});
