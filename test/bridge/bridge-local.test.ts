import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Docker from "dockerode";
import { createSwarmClient } from "../../src/client/swarm-client.ts";
import { defaultSandboxImage } from "../../src/sandbox/docker/sandbox-image.ts";
import { tempDir } from "../cli/helpers.ts";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { freePort } from "../support/daemon-process.ts";
import { startBridge } from "./bridge-client.ts";

/** Whether a Docker engine answers and the sandbox image is built: the docker start needs both. */
async function dockerReady(): Promise<string | undefined> {
  try {
    const docker = new Docker();
    await docker.ping();
    await docker.getImage(defaultSandboxImage()).inspect();
    return undefined;
  } catch (err) {
    return `no Docker engine or no ${defaultSandboxImage()} image (${err instanceof Error ? err.message : String(err)})`;
  }
}

async function untilDown(url: string): Promise<void> {
  const client = createSwarmClient({ url, source: "test" });
  for (let i = 0; i < 150 && (await client.health(500)); i++) await new Promise((r) => setTimeout(r, 100));
}

describe("tool bridge: unreachable service and swarm_start_service", () => {
  let d: Daemon;
  let dir: string;
  before(async () => {
    d = await startDaemon();
    dir = tempDir("swarm-bridge-local-");
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("started as `swarm mcp`, answers every service tool with an error naming an unreachable SWARM_URL", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const bridge = await startBridge({ SWARM_URL: url, SWARM_SPECS_DIR: join(dir, "specs") }, { viaBin: true });
    try {
      for (const [name, args] of [
        ["swarm_get_run", { runId: "r_1" }],
        ["swarm_create_run", { spec: { name: "x", script: [] } }],
        ["swarm_watch_events", { runId: "r_1", maxWaitSeconds: 5 }],
      ] as const) {
        const answer = await bridge.tool(name, args);
        assert.equal(answer.isError, true, name);
        assert.equal(
          answer.text,
          `Cannot reach swarmd at ${url} (SWARM_URL): ECONNREFUSED. Start it (\`swarmd\`, \`make run\`, or the swarm_start_service tool) or set SWARM_URL to where it listens.`,
        );
        assert.deepEqual(answer.data, { error: answer.text, url, unreachable: true });
      }
      // Local tools still work without the service.
      assert.equal((await bridge.tool("swarm_spec_list")).isError, false);
    } finally {
      await bridge.close();
    }
  });

  it("does not start a second service where one already answers", async () => {
    const bridge = await startBridge({ SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") });
    try {
      const answer = await bridge.tool("swarm_start_service", {});
      assert.deepEqual(answer.data, { url: d.url, alreadyRunning: true });
      assert.match(answer.text, /already answers/);
    } finally {
      await bridge.close();
    }
  });

  it("refuses to start a service for a SWARM_URL on another machine", async () => {
    const bridge = await startBridge({ SWARM_URL: "http://192.0.2.1:4600", SWARM_SPECS_DIR: join(dir, "specs") });
    try {
      const answer = await bridge.tool("swarm_start_service", { waitSeconds: 1 });
      assert.equal(answer.isError, true);
      assert.match(answer.text, /not this machine's loopback address/);
    } finally {
      await bridge.close();
    }
  });

  it("starts swarmd as a detached process where SWARM_URL points and waits for /health", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    // Its own short folder: sandbox socket paths under it must stay within 107 bytes.
    const dataDir = tempDir("sbp-");
    const bridge = await startBridge({
      SWARM_URL: url,
      SWARM_DATA_DIR: dataDir,
      SWARM_LOG_LEVEL: "warn",
      SWARM_SPECS_DIR: join(dir, "specs"),
    });
    let pid: number | undefined;
    try {
      const answer = await bridge.tool("swarm_start_service", { runtime: "process", waitSeconds: 90 });
      assert.equal(answer.isError, false, answer.text);
      pid = answer.data.pid;
      assert.deepEqual(
        { ...answer.data, pid: undefined },
        {
          url,
          alreadyRunning: false,
          mode: "process",
          runtime: "process",
          pid: undefined,
          dataDir,
          log: join(dataDir, "swarmd.log"),
        },
      );
      // It is a real swarmd: the bridge's own tools now reach it.
      const run = await bridge.tool("swarm_create_run", {
        spec: { name: "e", script: [] },
        prompt: "started by the bridge",
      });
      assert.equal(run.isError, false, run.text);
      assert.equal(
        (await bridge.tool("swarm_get_result", { agentId: run.data.rootAgentId, waitSeconds: 60 })).data.result,
        "started by the bridge",
      );
      assert.ok(existsSync(join(dataDir, "ledger")), "its ledger is in SWARM_DATA_DIR");
    } finally {
      await bridge.close();
      if (pid) process.kill(pid, "SIGTERM");
      await untilDown(url);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("starts swarmd in a container with the docker runtime when an engine answers", async (t) => {
    const missing = await dockerReady();
    if (missing) return t.skip(missing);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dataDir = tempDir("sbd-");
    const bridge = await startBridge({ SWARM_URL: url, SWARM_DATA_DIR: dataDir, SWARM_SPECS_DIR: join(dir, "specs") });
    try {
      const answer = await bridge.tool("swarm_start_service", { runtime: "docker", waitSeconds: 180 });
      assert.equal(answer.isError, false, answer.text);
      assert.deepEqual(
        [answer.data.url, answer.data.mode, answer.data.runtime, answer.data.containerName],
        [url, "container", "docker", `swarmd-daemon-${port}`],
      );
      const run = await bridge.tool("swarm_create_run", { spec: { name: "e", script: [] }, prompt: "in a container" });
      assert.equal(
        (await bridge.tool("swarm_get_result", { agentId: run.data.rootAgentId, waitSeconds: 120 })).data.result,
        "in a container",
      );
      const sandbox = (await bridge.tool("swarm_get_agent", { agentId: run.data.rootAgentId })).data.sandboxId;
      assert.ok(sandbox, "the agent had a sandbox");
    } finally {
      await bridge.close();
      await new Docker()
        .getContainer(`swarmd-daemon-${port}`)
        .remove({ force: true })
        .catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
