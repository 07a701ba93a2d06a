import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { harnessModelFile } from "../../src/gateway/harness-model.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import { attachHarnessClient, HarnessRejected } from "../../src/harness/client.ts";
import type { HarnessBuildRecord } from "../../src/harness/harness-build.ts";
import { HARNESS_FILES, HASH_LENGTH } from "../../src/harness/harness-files.ts";
import { ensureHarnessBundle, HARNESS_NODE_FLAGS, SWARMD_ROOT } from "../../src/harness/launch.ts";
import { CONTROL_FILES } from "../../src/harness/protocol.ts";
import { until } from "../support/harness-fixture.ts";

const record = (dir: string) => JSON.parse(readFileSync(join(dir, HARNESS_FILES.inputs), "utf8")) as HarnessBuildRecord;
const cacheStatus = (dir: string) =>
  JSON.parse(
    execFileSync(process.execPath, [...HARNESS_NODE_FLAGS, join(dir, HARNESS_FILES.boot), "--code-cache-status"], {
      encoding: "utf8",
    }),
  ) as unknown;

/** A copy of the built harness beside the real one (its packages found in the same node_modules), removed after the test. */
function copyOfBuild(t: { after(fn: () => void): void }): string {
  const copy = join(SWARMD_ROOT, "dist", `.test-harness-${process.pid}-${Date.now()}`);
  cpSync(ensureHarnessBundle(), copy, { recursive: true });
  t.after(() => rmSync(copy, { recursive: true, force: true }));
  return copy;
}

/** A harness started from the boot in `dir`, on a fresh control folder; resolves once its socket accepts. */
async function startFrom(dir: string, t: { after(fn: () => void): void }) {
  const root = mkdtempSync(join(tmpdir(), "swarmd-boot-"));
  const control = join(root, "control");
  const work = join(root, "work");
  mkdirSync(control);
  mkdirSync(work);
  writeFileSync(join(control, CONTROL_FILES.spec), JSON.stringify({ name: "t", script: [] }));
  writeFileSync(join(control, CONTROL_FILES.model), JSON.stringify(harnessModelFile(SCRIPTED_MODEL, false)));
  const child = spawn(
    process.execPath,
    [...HARNESS_NODE_FLAGS, join(dir, HARNESS_FILES.boot), "--control", control, "--work", work],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  t.after(() => {
    child.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  });
  await until(
    () => output.includes("harness ready") || child.exitCode !== null,
    20_000,
    () => `harness did not start: ${output}`,
  );
  assert.equal(child.exitCode, null, output);
  const socket = connect(join(control, CONTROL_FILES.socket));
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const client = attachHarnessClient(socket, 0, { onEvent: () => undefined });
  t.after(() => client.close());
  return { client, exited, output: () => output };
}

describe("the built harness", () => {
  it("is rebuilt only when a file it was built from changed, imports outside src/harness and packages included", () => {
    const dir = ensureHarnessBundle();
    const built = record(dir).startedAt;
    assert.equal(record(ensureHarnessBundle()).startedAt, built, "fresh: not rebuilt");

    const { inputs } = record(dir);
    assert.ok(inputs.includes("src/harness/main.ts"));
    assert.ok(inputs.includes("src/harness/agent.ts"), "the agent, made later, is in the build too");
    assert.ok(inputs.includes("src/spec/approve.ts"), "the approval rules the harness imports are one of its inputs");
    assert.ok(
      inputs.includes("node_modules/@mariozechner/pi-coding-agent/package.json"),
      "a bundled package is watched through its package.json",
    );
    // Model calls go through node's own fetch (model-transport.ts): the undici package is not carried.
    assert.ok(!inputs.includes("node_modules/undici/package.json"), "the harness carries no undici package");
    // It takes the spec as the daemon validated it: zod's full build (for the spec's schema) is not carried, only its mini build.
    const pi = readFileSync(join(dir, HARNESS_FILES.pi), "latin1");
    assert.ok(
      pi.includes("// node_modules/zod/v4/mini/"),
      "zod's mini build is there, named as esbuild names a module",
    );
    assert.ok(!pi.includes("// node_modules/zod/v4/classic/"), "zod's full build is not in pi.cjs");
    // Mark an input as changed after the build started (its content stays as it is).
    const input = join(SWARMD_ROOT, "src/spec/approve.ts");
    const later = new Date(built + 1);
    utimesSync(input, later, later);
    assert.ok(record(ensureHarnessBundle()).startedAt > built, "stale: rebuilt");
    assert.ok(statSync(join(dir, HARNESS_FILES.boot)).mtimeMs >= built);
  });

  it("has code caches V8 takes under the harness's flags, and ignores a cache of another build or one V8 refuses", (t) => {
    assert.deepEqual(cacheStatus(ensureHarnessBundle()), { main: "accepted", pi: "accepted" });
    const copy = copyOfBuild(t);
    // main.cache now belongs to pi.cjs (not main.cjs's hash); pi.cache names pi.cjs's hash but holds garbage.
    const piCache = readFileSync(join(copy, HARNESS_FILES.piCache));
    writeFileSync(join(copy, HARNESS_FILES.mainCache), piCache);
    writeFileSync(
      join(copy, HARNESS_FILES.piCache),
      Buffer.concat([piCache.subarray(0, HASH_LENGTH), Buffer.alloc(4096, 7)]),
    );
    assert.deepEqual(cacheStatus(copy), { main: "none", pi: "rejected" });
  });

  it("starts and makes its agent without usable code caches", async (t) => {
    const copy = copyOfBuild(t);
    writeFileSync(join(copy, HARNESS_FILES.mainCache), "not a cache");
    writeFileSync(join(copy, HARNESS_FILES.piCache), Buffer.alloc(100_000, 1));
    const { client } = await startFrom(copy, t);
    const stats = (await client.request({ type: "get_session_stats" })) as { userMessages?: unknown };
    assert.equal(stats.userMessages, 0, "the agent was made: its session answered");
  });

  it("answers on its socket before pi is loaded, and ends with the reason when its agent cannot be made", async (t) => {
    const copy = copyOfBuild(t);
    writeFileSync(join(copy, HARNESS_FILES.pi), 'throw new Error("pi.cjs was loaded");\n');
    const { client, exited, output } = await startFrom(copy, t);
    assert.deepEqual(await client.request({ type: "get_state" }), {
      busy: false,
      queued: 0,
      loaded: false,
      lastHseq: 0,
    });
    await assert.rejects(
      client.request({ type: "steer", message: "too early" }),
      (err: unknown) => err instanceof HarnessRejected && err.harnessCode === "NO_TURN_RUNNING",
    );
    await client.request({ type: "abort" });
    void client.request({ type: "prompt", message: "go" }).catch(() => undefined);
    assert.equal(await exited, 1);
    assert.match(output(), /cannot make the agent: Error: pi\.cjs was loaded/);
  });
});
