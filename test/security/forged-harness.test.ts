import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import { type DaemonProcess, spawnDaemon, waitState } from "../support/daemon-process.ts";
import { openEvents } from "../support/sse-client.ts";

const quiet = { info: () => undefined, warn: () => undefined };
const hasBwrap = (() => {
  try {
    execFileSync("bwrap", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** The agent's own bash steps, then "done"; the run stays live so a restarted daemon reconnects to it. */
const attacker = (name: string, commands: string[], answer = "done") => ({
  name,
  script: [...commands.map((command) => ({ tool: "bash", args: { command } })), { text: answer }],
});

async function until<T>(what: string, get: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A second run keeps working: its agent answers a prompt. */
async function otherRunWorks(d: DaemonProcess, text: string): Promise<void> {
  const created = await d.call("POST", "/runs", { spec: { name: "bystander", script: [] }, prompt: text });
  assert.equal(created.status, 202);
  const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=90`);
  assert.equal(result.body.result, text);
}

describe("a sandbox cannot take the daemon down", { skip: !hasBwrap && "bubblewrap is not installed" }, () => {
  it("an agent cannot reach its harness; a forged harness sending forged turn_settled, bad lines, a 10 MiB line and a flood leaves the daemon up, across restarts", {
    timeout: 600_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-forged-"));
    const runtime = createProcessRuntime({ dataDir, logger: quiet });
    let d = await spawnDaemon(dataDir);
    let forger: ChildProcess | undefined;
    try {
      // The agent tries to reach its harness: kill it, replace its socket, write beside it. All refused.
      const takeover =
        "kill -9 $(pgrep -f 'dist/harnes[s]/boot.cjs') 2>&1; rm -f /control/harness.sock 2>&1; echo x > /control/planted 2>&1; true";
      const created = await d.call("POST", "/runs", {
        spec: attacker("forger", [takeover], "{{lastToolResult}}"),
        prompt: "go",
        keepAlive: true,
      });
      assert.equal(created.status, 202);
      const { runId, rootAgentId: root } = created.body;
      const refusal = (await d.call("GET", `/agents/${root}/result?wait=90`)).body.result as string;
      assert.match(refusal, /kill: \(\d+\) - Operation not permitted/);
      assert.match(refusal, /cannot remove '\/control\/harness.sock': Permission denied/);
      assert.match(refusal, /\/control\/planted: Permission denied/);
      // An idle sibling with no result: the forger's await_result calls on it stay pending.
      const idle = (
        await d.call("POST", `/runs/${runId}/agents`, {
          parentAgentId: root,
          spec: { name: "idle", script: [] },
          keepAlive: true,
        })
      ).body.agentId as string;
      await waitState(d, idle, "running");
      const sandboxId = (await d.call("GET", `/agents/${root}`)).body.sandboxId as string;
      const control = runtime.controlDir(sandboxId);
      const work = join(dirname(control), "work");
      writeFileSync(join(work, "await-target"), idle);
      // In depth: a harness gone hostile (what the agent could not do) takes over the socket.
      forger = spawn(process.execPath, [join(import.meta.dirname, "forger.mjs"), join(control, "harness.sock"), work], {
        stdio: "ignore",
        detached: true,
      });
      await until("the forger to listen", () => (existsSync(join(work, "forger.jsonl")) ? true : undefined), 30_000);

      // The daemon's connection still goes to the real harness; after a restart it reaches the forger.
      await d.kill("SIGKILL");
      d = await spawnDaemon(dataDir);
      const notes = () =>
        readFileSync(join(work, "forger.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      await until("the forger to send its attack", () => (notes().some((n) => "sent" in n) ? true : undefined));

      assert.equal((await d.call("GET", "/health")).status, 200);
      await otherRunWorks(d, "still here");
      // Host calls beyond 8 answered and 64 waiting were refused at once, and counted on the agent;
      // the rest wait for the idle sibling.
      const refused = await until("refused host calls", () => {
        const n = notes().filter((x) => typeof x.error === "string" && /too many host calls/.test(x.error));
        return n.length >= 8 ? n : undefined;
      });
      assert.deepEqual(
        refused.map((n) => n.answer),
        Array.from({ length: 8 }, (_, i) => `wait-${72 + i}`),
        "the 8 past the queue, and only they",
      );
      const counted = await until("the refusals counted", async () => {
        const n = (await d.call("GET", `/agents/${root}`)).body.toolErrors as number;
        return n >= 8 ? n : undefined;
      });
      assert.equal(counted, 8);
      // The forged agent's turn was never settled by the forged line, and the oversized data was capped.
      const events = await openEvents(d.url, runId);
      const big = await events.waitFor(
        (m) => m.event === "tool_start" && m.data.agentId === root && m.data.truncated === true,
        60_000,
      );
      events.close();
      assert.equal(big.data.forgedBig, undefined);
      const settled = events.messages.filter((m) => m.event === "handle_settled" && m.data.agentId === root);
      assert.equal(settled.length, 1, "only the real turn settled");
      assert.equal(d.child.exitCode, null);
      assert.ok(d.output().split("\n").length < 200, "bad lines are logged per burst, not per line");
      // An ask the policy (none) does not hold is allowed unrecorded; the approval events the harness
      // forged before it (its lines are handled in order) reached neither the inbox nor the ledger.
      const unheld = await until("the answer to the unheld ask", () => notes().find((n) => n.answer === "ask-unheld"));
      assert.deepEqual(unheld.data, { decision: "allow", message: null });
      assert.deepEqual((await d.call("GET", `/runs/${runId}/permissions?state=all`)).body.permissions, []);

      // And again: a restart with the forger still there starts and listens.
      await d.kill("SIGKILL");
      d = await spawnDaemon(dataDir);
      await new Promise((r) => setTimeout(r, 2_000));
      assert.equal((await d.call("GET", "/health")).status, 200);
      await otherRunWorks(d, "still here after restart");
      assert.equal((await d.call("DELETE", `/runs/${runId}`)).status, 204);
    } catch (err) {
      console.error(`daemon output:\n${d.output()}`);
      throw err;
    } finally {
      forger?.kill("SIGKILL");
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000)).catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("an agent cannot touch its control folder; a FIFO for events.jsonl and a link to a host file for harness.out leave the daemon starting, and nothing of the file leaks", {
    timeout: 300_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-fifo-"));
    const secretDir = mkdtempSync(join(tmpdir(), "swarmd-host-secret-"));
    const secret = join(secretDir, "shadow");
    writeFileSync(secret, "root:HOST-SECRET-5f2c:19000:0:99999:7:::\n");
    const runtime = createProcessRuntime({ dataDir, logger: quiet });
    let d = await spawnDaemon(dataDir);
    try {
      const tamper = `rm -f /control/events.jsonl 2>&1; mkfifo /control/fifo 2>&1; ln -sf ${secret} /control/harness.out 2>&1; true`;
      const created = await d.call("POST", "/runs", {
        spec: attacker("fifo", [tamper], "{{lastToolResult}}"),
        prompt: "go",
        keepAlive: true,
      });
      const { runId, rootAgentId: root } = created.body;
      const refusal = (await d.call("GET", `/agents/${root}/result?wait=90`)).body.result as string;
      assert.equal(
        refusal.match(/Permission denied/g)?.length,
        3,
        `the agent cannot touch its control folder: ${refusal}`,
      );
      // In depth, as a harness gone hostile could: the control files become a FIFO and a link to a host file.
      const control = runtime.controlDir((await d.call("GET", `/agents/${root}`)).body.sandboxId as string);
      rmSync(join(control, "events.jsonl"));
      execFileSync("mkfifo", [join(control, "events.jsonl")]);
      rmSync(join(control, "harness.out"), { force: true });
      symlinkSync(secret, join(control, "harness.out"));
      assert.ok(
        execFileSync("stat", ["-c", "%F", join(control, "events.jsonl")])
          .toString()
          .includes("fifo"),
        "the attack took place",
      );

      await d.kill("SIGKILL");
      // spawnDaemon waits (60 s) for /health: the old start-up blocked forever reading the FIFO.
      d = await spawnDaemon(dataDir);
      assert.equal((await d.call("GET", "/health")).status, 200);
      // The agent itself goes on: its harness kept its own log open.
      assert.equal((await d.call("POST", `/agents/${root}/prompt`, { text: "again" })).status, 202);
      await until(
        "the new turn's result",
        async () => ((await d.call("GET", `/agents/${root}/result`)).body.result === "again" ? true : undefined),
        90_000,
      );
      await otherRunWorks(d, "unaffected");

      const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
      const events = await openEvents(d.url, runId);
      await events.waitFor((m) => m.id === snapshot.asOf, 30_000);
      events.close();
      assert.doesNotMatch(JSON.stringify(events.messages), /HOST-SECRET/);
      assert.doesNotMatch(d.output(), /HOST-SECRET/);
    } catch (err) {
      console.error(`daemon output:\n${d.output()}`);
      throw err;
    } finally {
      await d.kill("SIGKILL");
      for (const s of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(s.sandboxId, AbortSignal.timeout(30_000)).catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(secretDir, { recursive: true, force: true });
    }
  });
});
