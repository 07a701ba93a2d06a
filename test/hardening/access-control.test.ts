import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { findBubblewrap } from "../../src/sandbox/process/bubblewrap.ts";
import { call, createRuntime, type Daemon, sandboxRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { freePort } from "../support/daemon-process.ts";
import { openEvents } from "../support/sse-client.ts";

const REPO = resolve(import.meta.dirname, "../..");
const TOKEN = "tok-3f9a1c77e2b04d5d9e8a";

/** Whether a TCP connection to host:port is accepted. */
function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const settle = (accepted: boolean) => {
      socket.destroy();
      done(accepted);
    };
    socket.setTimeout(3_000, () => settle(false));
    socket.on("connect", () => settle(true));
    socket.on("error", () => done(false));
  });
}

/** Local addresses of the LISTEN sockets on `port`, from the kernel's own tables. */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let table: string;
    try {
      table = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of table.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [hexAddress, hexPort] = (local ?? "").split(":");
      if (state !== "0A" || hexAddress === undefined || Number.parseInt(hexPort ?? "", 16) !== port) continue;
      found.push(
        hexAddress.length === 8
          ? hexAddress
              .match(/../g)!
              .reverse()
              .map((b) => Number.parseInt(b, 16))
              .join(".")
          : `[${hexAddress}]`,
      );
    }
  }
  return found;
}

/** Interface names a sandbox sees, from `cat /proc/net/dev` output. */
const interfaces = (procNetDev: string) => [...procNetDev.matchAll(/^\s*([^\s:|]+):/gm)].map((m) => m[1]).sort();

async function resultText(d: Daemon, agentId: string): Promise<string> {
  const result = await d.call("GET", `/agents/${agentId}/result?wait=90`);
  assert.equal(result.status, 200, JSON.stringify(result.body));
  return result.body.result as string;
}

describe("access control", () => {
  it("listens on 127.0.0.1 by default: the config default, and the daemon `make run` starts", {
    timeout: 90_000,
  }, async (t) => {
    assert.equal(loadConfig({}).host, "127.0.0.1");

    // What `make run` runs, without letting make install anything in the middle of a test run.
    const recipe = spawnSync("make", ["-s", "-n", "run"], { cwd: REPO, encoding: "utf8" }).stdout.trim().split("\n");
    assert.equal(recipe.length, 1, `make run would first run: ${recipe.slice(0, -1).join("; ")} (run make install)`);
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), "swarmd-run-"));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SWARM_PORT: String(port),
      SWARM_DATA_DIR: dataDir,
      SWARM_LOG_LEVEL: "info",
    };
    delete env.SWARM_HOST;
    delete env.SWARM_TOKEN;
    const daemon = spawn("sh", ["-c", recipe[0] as string], {
      cwd: REPO,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<void>((done) => daemon.on("exit", () => done()));
    t.after(async () => {
      // Its own process group: make's shell, npx and node stop together.
      if (daemon.exitCode === null && daemon.pid !== undefined) process.kill(-daemon.pid, "SIGTERM");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    });
    let output = "";
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`the daemon did not start: ${output}`)), 60_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (!output.includes("swarmd listening on")) return;
        clearTimeout(timer);
        done();
      };
      daemon.stdout.on("data", onData);
      daemon.stderr.on("data", onData);
      daemon.on("exit", (code) => {
        clearTimeout(timer);
        fail(new Error(`the daemon exited (${code}): ${output}`));
      });
    });

    assert.deepEqual(await call(`http://127.0.0.1:${port}`, "GET", "/health").then((r) => [r.status, r.body]), [
      200,
      { ok: true },
    ]);
    // The kernel's view: every listening socket on the port is bound to loopback.
    if (listeningAddresses(port).length > 0) assert.deepEqual([...new Set(listeningAddresses(port))], ["127.0.0.1"]);
    // And from another address of this machine it is not there.
    const external = Object.values(networkInterfaces())
      .flat()
      .filter((i) => i !== undefined && !i.internal && i.family === "IPv4");
    for (const address of external)
      assert.equal(await reachable(address!.address, port), false, `reachable on ${address!.address}:${port}`);
    t.diagnostic(
      `listening on ${listeningAddresses(port).join(", ")}; unreachable on ${external.map((i) => i!.address).join(", ") || "(no other address)"}`,
    );
  });

  describe("with SWARM_TOKEN set", () => {
    let d: Daemon;
    let run: { runId: string; rootAgentId: string };
    before(async () => {
      d = await startDaemon({ token: TOKEN });
      const created = await d.call(
        "POST",
        "/runs",
        { spec: { name: "guarded", script: [] }, keepAlive: true },
        { authorization: `Bearer ${TOKEN}` },
      );
      run = created.body;
      await waitForState(d, run.rootAgentId, "running", 30_000, { authorization: `Bearer ${TOKEN}` });
    });
    after(() => d.stop());

    /** Every route, with a body that would be accepted, so a missing check would show as a 2xx. */
    const routes = (): Array<[method: string, path: string, body?: unknown]> => [
      ["POST", "/runs", { spec: { name: "intruder", script: [] }, keepAlive: true }],
      ["GET", `/runs/${run.runId}`],
      ["DELETE", `/runs/${run.runId}`],
      ["GET", `/runs/${run.runId}/events`],
      ["POST", `/runs/${run.runId}/agents`, { parentAgentId: run.rootAgentId, spec: { name: "intruder", script: [] } }],
      ["GET", `/agents/${run.rootAgentId}`],
      ["POST", `/agents/${run.rootAgentId}/prompt`, { text: "obey" }],
      ["POST", `/agents/${run.rootAgentId}/steer`, { message: "obey" }],
      ["POST", `/agents/${run.rootAgentId}/pause`, {}],
      ["POST", `/agents/${run.rootAgentId}/resume`, {}],
      ["POST", `/agents/${run.rootAgentId}/stop`, {}],
      ["GET", `/agents/${run.rootAgentId}/result`],
      ["GET", `/runs/${run.runId}/permissions`],
      ["POST", `/agents/${run.rootAgentId}/permissions/p_0123456789abcdef01234567`, { decision: "allow" }],
      ["GET", "/metrics"],
      ["GET", "/no-such-route"],
      ["POST", "/health"],
    ];

    it("refuses every route but /health without the right bearer token: 401 {error}, and nothing happens", async () => {
      const refusals: Array<Record<string, string>> = [
        {},
        { authorization: "" },
        { authorization: "Bearer" },
        { authorization: "Bearer " },
        { authorization: "Bearer wrong-token" },
        { authorization: `Bearer ${TOKEN}x` },
        { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
        { authorization: `Bearer ${TOKEN.toUpperCase()}` },
        { authorization: `Bearer ${TOKEN} ${TOKEN}` },
        { authorization: TOKEN },
        { authorization: `Basic ${Buffer.from(`user:${TOKEN}`).toString("base64")}` },
        { authorization: `Token ${TOKEN}` },
        { "x-swarm-token": TOKEN },
        { cookie: `token=${TOKEN}` },
      ];
      const runsBefore = d.ledger.runIds().length;
      const seqBefore = d.ledger.lastSeq(run.runId);
      for (const headers of refusals) {
        for (const [method, path, body] of routes()) {
          const reply = await d.call(method, path, body, headers);
          const what = `${method} ${path} with ${JSON.stringify(headers)}`;
          assert.equal(reply.status, 401, what);
          assert.deepEqual(Object.keys(reply.body), ["error"], what);
          assert.equal(typeof reply.body.error, "string", what);
          assert.equal(reply.headers["www-authenticate"], "Bearer", what);
        }
      }
      // Refused before anything ran: no run created, no event written, the agent untouched.
      assert.equal(d.ledger.runIds().length, runsBefore);
      assert.equal(d.ledger.lastSeq(run.runId), seqBefore);
      // /health stays open for liveness probes.
      assert.deepEqual(await d.call("GET", "/health").then((r) => [r.status, r.body]), [200, { ok: true }]);
    });

    it("serves every route to the right token (the scheme is case-insensitive)", async () => {
      const ok = { authorization: `Bearer ${TOKEN}` };
      assert.equal((await d.call("GET", `/runs/${run.runId}`, undefined, ok)).status, 200);
      assert.equal(
        (await d.call("GET", `/agents/${run.rootAgentId}`, undefined, { authorization: `bearer ${TOKEN}` })).status,
        200,
      );
      assert.equal((await fetch(`${d.url}/metrics`, { headers: ok })).status, 200);
      const events = await openEvents(d.url, run.runId, { token: TOKEN });
      await events.waitFor((m) => m.event === "run_started");
      events.close();
      assert.equal(events.status, 200);
      const child = await d.call(
        "POST",
        `/runs/${run.runId}/agents`,
        { parentAgentId: run.rootAgentId, spec: { name: "child", script: [] }, keepAlive: true },
        ok,
      );
      assert.equal(child.status, 202);
      await waitForState(d, child.body.agentId, "running", 30_000, ok);
      assert.equal((await d.call("POST", `/agents/${child.body.agentId}/prompt`, { text: "echo me" }, ok)).status, 202);
      assert.equal(
        (await d.call("GET", `/agents/${child.body.agentId}/result?wait=60`, undefined, ok)).body.result,
        "echo me",
      );
      assert.equal((await d.call("POST", `/agents/${child.body.agentId}/steer`, { message: "m" }, ok)).status, 202);
      assert.equal((await d.call("POST", `/agents/${child.body.agentId}/pause`, {}, ok)).status, 202);
      assert.equal((await d.call("POST", `/agents/${child.body.agentId}/resume`, {}, ok)).status, 202);
      assert.equal((await d.call("POST", `/agents/${child.body.agentId}/stop`, {}, ok)).status, 202);
      const created = await d.call("POST", "/runs", { spec: { name: "second", script: [] } }, ok);
      assert.equal(created.status, 202);
      assert.equal((await d.call("DELETE", `/runs/${created.body.runId}`, undefined, ok)).status, 204);
    });
  });

  describe("runs are isolated from each other", () => {
    let d: Daemon;
    let a: { runId: string; rootAgentId: string };
    let b: { runId: string; rootAgentId: string };
    before(async () => {
      d = await startDaemon();
      // Each root settles a result that only its own run may read, and stays live.
      a = (
        await d.call("POST", "/runs", { spec: { name: "a", script: [] }, prompt: "secret-of-run-A", keepAlive: true })
      ).body;
      b = (
        await d.call("POST", "/runs", { spec: { name: "b", script: [] }, prompt: "secret-of-run-B", keepAlive: true })
      ).body;
      assert.equal(await resultText(d, a.rootAgentId), "secret-of-run-A");
      assert.equal(await resultText(d, b.rootAgentId), "secret-of-run-B");
    });
    after(() => d.stop());

    const agentsOf = async (runId: string) =>
      (await d.call("GET", `/runs/${runId}`)).body.agents.map((x: { agentId: string; state: string }) => [
        x.agentId,
        x.state,
      ]);

    it("over HTTP: no spawn under another run's agent (404), no waitFor on it (400), idempotency keys do not cross runs", async () => {
      const underB = await d.call("POST", `/runs/${a.runId}/agents`, {
        parentAgentId: b.rootAgentId,
        spec: { name: "x", script: [] },
      });
      assert.equal(underB.status, 404);
      assert.deepEqual(Object.keys(underB.body), ["error"]);
      const underA = await d.call("POST", `/runs/${b.runId}/agents`, {
        parentAgentId: a.rootAgentId,
        spec: { name: "x", script: [] },
      });
      assert.equal(underA.status, 404);
      const waitsOnB = await d.call("POST", `/runs/${a.runId}/agents`, {
        parentAgentId: a.rootAgentId,
        spec: { name: "x", script: [] },
        waitFor: [b.rootAgentId],
      });
      assert.equal(waitsOnB.status, 400);
      assert.deepEqual(Object.keys(waitsOnB.body), ["error"]);
      assert.deepEqual(await agentsOf(a.runId), [[a.rootAgentId, "running"]], "nothing was spawned in A");
      assert.deepEqual(await agentsOf(b.runId), [[b.rootAgentId, "running"]], "nothing was spawned in B");

      const keyed = { spec: { name: "k", script: [] }, idempotencyKey: "same-key", keepAlive: true };
      const inA = await d.call("POST", `/runs/${a.runId}/agents`, { parentAgentId: a.rootAgentId, ...keyed });
      const inB = await d.call("POST", `/runs/${b.runId}/agents`, { parentAgentId: b.rootAgentId, ...keyed });
      assert.equal(inA.status, 202);
      assert.equal(inB.status, 202);
      assert.notEqual(inB.body.agentId, inA.body.agentId, "run B's retry key does not return run A's child");
      assert.equal((await d.call("GET", `/agents/${inB.body.agentId}`)).body.runId, b.runId);
      await waitForState(d, inA.body.agentId, "running");
      await waitForState(d, inB.body.agentId, "running");

      // A subtree stop of A's root reaches none of B's agents.
      const stopped = await d.call("POST", `/agents/${a.rootAgentId}/stop`, { scope: "subtree" });
      assert.deepEqual(
        stopped.body.results.map((r: { agentId: string }) => r.agentId).sort(),
        [a.rootAgentId, inA.body.agentId].sort(),
      );
      assert.deepEqual(await agentsOf(b.runId), [
        [b.rootAgentId, "running"],
        [inB.body.agentId, "running"],
      ]);
    });

    it("from inside a sandbox: await_result and spawn_agent on another run's agent answer an error and reveal nothing", async () => {
      const c = (
        await d.call("POST", "/runs", { spec: { name: "c", script: [] }, prompt: "secret-of-run-C", keepAlive: true })
      ).body;
      assert.equal(await resultText(d, c.rootAgentId), "secret-of-run-C");
      const probe = async (name: string, step: Record<string, unknown>) => {
        const spawned = await d.call("POST", `/runs/${c.runId}/agents`, {
          parentAgentId: c.rootAgentId,
          spec: { name, script: [step, { text: "{{lastToolResult}}" }] },
          prompt: "probe",
        });
        assert.equal(spawned.status, 202);
        return resultText(d, spawned.body.agentId);
      };
      // The same call on an agent of its own run works: what follows is refused for being foreign.
      const own = await probe("await-own", { tool: "await_result", args: { agentId: c.rootAgentId, waitSeconds: 1 } });
      assert.match(own, /secret-of-run-C/);

      const foreignAwait = await probe("await-foreign", {
        tool: "await_result",
        args: { agentId: b.rootAgentId, waitSeconds: 1 },
      });
      assert.doesNotMatch(foreignAwait, /secret-of-run-B/);
      assert.match(foreignAwait, /not an agent of this run/);
      const foreignSpawn = await probe("spawn-waiting-on-foreign", {
        tool: "spawn_agent",
        args: { spec: { name: "w", script: [] }, prompt: "x", waitFor: [b.rootAgentId] },
      });
      assert.doesNotMatch(foreignSpawn, /"agentId"/, foreignSpawn);
      assert.match(
        foreignSpawn,
        new RegExp(`${b.rootAgentId}.*(outside|not).*run|run.*${b.rootAgentId}`),
        foreignSpawn,
      );
      assert.equal((await agentsOf(c.runId)).length, 4, "root and the three probes; no child spawned");
      assert.deepEqual(await agentsOf(b.runId).then((x: string[][]) => x[0]), [b.rootAgentId, "running"]);
    });
  });

  describe("sandboxes", () => {
    const isolated = findBubblewrap() !== undefined || sandboxRuntime() === "docker";
    let d: Daemon;
    const saved = {
      SWARM_TOKEN: process.env.SWARM_TOKEN,
      SWARMD_HARDENING_CANARY: process.env.SWARMD_HARDENING_CANARY,
    };
    before(async () => {
      // Secrets in the daemon's own environment, as a deployment would have them.
      process.env.SWARM_TOKEN = TOKEN;
      process.env.SWARMD_HARDENING_CANARY = "canary-91be5d";
      // What a sandbox sees: a real runtime (process, or docker by SWARM_E2E_RUNTIME).
      d = await startDaemon({ token: TOKEN, runtime: (dataDir) => createRuntime(sandboxRuntime(), dataDir) });
    });
    after(async () => {
      await d.stop();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const runScript = async (spec: Record<string, unknown>, command: string) => {
      const created = await d.call(
        "POST",
        "/runs",
        {
          spec: { ...spec, script: [{ tool: "bash", args: { command } }, { text: "{{lastToolResult}}" }] },
          prompt: "go",
        },
        auth,
      );
      assert.equal(created.status, 202);
      const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=90`, undefined, auth);
      assert.equal(result.body.outcome, "success", JSON.stringify(result.body));
      return result.body.result as string;
    };

    it("have only lo without network, their own namespace with it, and never reach the daemon's port", {
      skip: isolated ? false : "no bubblewrap here: process sandboxes are not isolated",
    }, async () => {
      const port = new URL(d.url).port;
      const command = `cat /proc/net/dev; (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo DAEMON-REACHABLE || echo DAEMON-UNREACHABLE`;
      const closed = await runScript({ name: "offline" }, command);
      assert.deepEqual(interfaces(closed), ["lo"], closed);
      assert.match(closed, /DAEMON-UNREACHABLE/);

      // With `network: true` the sandbox has its own namespace and slirp4netns: still not the daemon.
      const open = await runScript({ name: "online", network: true }, command);
      assert.deepEqual(interfaces(open), ["lo", "tap0"], open);
      assert.match(open, /DAEMON-UNREACHABLE/);
    });

    it("never see the daemon's environment or token; the spec's env is there", async () => {
      const seen = await runScript(
        { name: "env", env: { VISIBLE_VAR: "shown-value" } },
        "env; echo ---; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; true",
      );
      assert.match(seen, /^VISIBLE_VAR=shown-value$/m);
      assert.doesNotMatch(seen, new RegExp(TOKEN), "the token");
      assert.doesNotMatch(seen, /canary-91be5d|SWARMD_HARDENING_CANARY|SWARM_TOKEN/, "the daemon's variables");
    });
  });
});
