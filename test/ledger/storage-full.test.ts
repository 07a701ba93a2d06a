/**
 * The ledger on a disk that fills up (a tmpfs of the test's own, filled from the host side): the
 * write that finds no room is refused with `STORAGE_FULL` naming the data folder and consumes no
 * seq; writes are refused at once until the storage recovers; reads go on; once space is freed a
 * recovery reopens the database, and what is written after it is still there after a restart, the
 * seqs running on without a gap. Needs root to mount the tmpfs; skipped with the reason otherwise.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { isStorageFull, type Ledger, type NewEvent } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { mountTmpfs } from "../support/tmpfs.ts";

const mounted = mountTmpfs(16);
const skip = "skip" in mounted ? mounted.skip : false;

const event = (i: number): NewEvent => ({ type: "note", agentId: null, data: { i, pad: "x".repeat(2000) } });

/** Append one event after another until the ledger refuses; the refusal. */
async function appendUntilRefused(ledger: Ledger, runId: string): Promise<unknown> {
  for (let i = 0; i < 10_000; i++) {
    const refused = await ledger.append(runId, [event(i)]).then(
      () => undefined,
      (err: unknown) => err,
    );
    if (refused) return refused;
  }
  throw new Error("the ledger never refused a write on a full disk");
}

describe("the ledger on a full disk", { skip }, () => {
  after(() => {
    if (!("skip" in mounted)) mounted.unmount();
  });

  it("refuses with STORAGE_FULL, keeps reading, recovers once space is freed, and loses nothing after", async (t) => {
    if ("skip" in mounted) return;
    const dataDir = mounted.dir;
    const path = join(dataDir, "ledger");
    let ledger = await openLedger(path, { dataDir });
    await ledger.append("r_a", [event(0), event(1)]);
    mounted.fill();

    const refused = await appendUntilRefused(ledger, "r_a");
    assert.ok(isSwarmError(refused, "STORAGE_FULL"), String(refused));
    assert.match(
      (refused as Error).message,
      new RegExp(`the data folder ${dataDir} is full \\(no space left on device\\)`),
    );
    const lastSeq = ledger.lastSeq("r_a");
    assert.ok(isStorageFull(ledger.storage()));
    // Refused at once, whatever the size, and no seq consumed.
    await assert.rejects(ledger.append("r_a", [{ type: "tiny", agentId: null, data: {} }]), { code: "STORAGE_FULL" });
    await assert.rejects(ledger.append("r_b", [{ type: "tiny", agentId: null, data: {} }]), { code: "STORAGE_FULL" });
    assert.equal(ledger.lastSeq("r_a"), lastSeq);
    assert.equal(ledger.lastSeq("r_b"), 0);
    // Still full: a check changes nothing, and reads go on.
    assert.ok(isStorageFull(await ledger.checkStorage()));
    assert.equal((await ledger.read("r_a", 0, 100_000)).length, lastSeq);

    mounted.free();
    // A read under way while the check reopens the database waits for it or goes first; it never fails.
    const [state, read] = await Promise.all([ledger.checkStorage(), ledger.read("r_a", 0, 100_000)]);
    assert.deepEqual(state, { ok: true });
    assert.equal(read.length, lastSeq);
    const after = await ledger.append("r_a", [event(-1), event(-2)]);
    assert.deepEqual(
      after.map((e) => e.seq),
      [lastSeq + 1, lastSeq + 2],
      "the seqs run on without a gap",
    );
    await ledger.append("r_b", [event(-3)]);
    await ledger.close();

    // What was written after the recovery survives a restart (without the reopen, LevelDB lost it).
    ledger = await openLedger(path, { dataDir });
    t.after(() => ledger.close());
    assert.equal(ledger.lastSeq("r_a"), lastSeq + 2);
    assert.equal(ledger.lastSeq("r_b"), 1);
    const seqs = (await ledger.read("r_a", 0, 100_000)).map((e) => e.seq);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
    );
  });

  it("recovers on its own, without anyone asking, once the space came back", async (t) => {
    if ("skip" in mounted) return;
    const dataDir = mounted.dir;
    const ledger = await openLedger(join(dataDir, "ledger-2"), { dataDir });
    t.after(() => ledger.close());
    mounted.fill();
    t.after(() => mounted.free());
    assert.ok(isSwarmError(await appendUntilRefused(ledger, "r_c"), "STORAGE_FULL"));
    mounted.free();
    const deadline = Date.now() + 10_000;
    while (!ledger.storage().ok && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(ledger.storage(), { ok: true });
    await ledger.append("r_c", [event(-1)]);
  });
});
