import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { isSwarmError } from "../../src/errors.ts";
import { engineOptions } from "../../src/sandbox/cluster/cluster-settings.ts";

describe("configuration from the environment", () => {
  it("defaults to loopback:4600, process sandboxes under ./data, a 30-minute quiet-turn limit and a 60 s member timeout", () => {
    const config = loadConfig({});
    assert.equal(config.host, "127.0.0.1");
    assert.equal(config.port, 4600);
    assert.equal(config.runtime, "process");
    assert.equal(config.dataDir, resolve("./data"));
    assert.equal(config.turnMaxMs, 30 * 60 * 1000);
    assert.equal(config.memberTimeoutMs, 60_000);
    assert.equal(config.poolSize, Math.min(4, availableParallelism()), "a pool of one sandbox per core, at most 4");
    assert.equal(config.token, undefined);
    assert.equal(config.inspect, false);
    assert.deepEqual(config.allowedHosts, []);
    assert.equal(config.isolation, "bubblewrap");
    assert.equal(config.bwrap, undefined);
  });

  it("reads every SWARM_* variable it documents", () => {
    const config = loadConfig({
      SWARM_HOST: "::1",
      SWARM_PORT: "4700",
      SWARM_DATA_DIR: "/tmp/swarmd-config-test",
      SWARM_RUNTIME: "docker",
      SWARM_TURN_MAX_MS: "5000",
      SWARM_MEMBER_TIMEOUT_MS: "7000",
      SWARM_HIBERNATE_AFTER_MS: "0",
      SWARM_START_CONCURRENCY: "3",
      SWARM_POOL_SIZE: "0",
      SWARM_TOKEN: "s3cret",
      SWARM_BODY_LIMIT: "2048",
      SWARM_MCP_MAX_SESSIONS: "8",
      SWARM_MCP_SESSION_IDLE_MS: "60000",
      SWARM_INSPECT: "1",
      SWARM_INSPECT_PORT: "8181",
      SWARM_DOCKER_IMAGE: "img:1",
      SWARM_LIMIT_PIDS: "64",
      SWARM_LIMIT_MEMORY_MIB: "256",
      SWARM_LIMIT_CPUS: "0.5",
      SWARM_LIMIT_DISK_MIB: "100",
      SWARM_LIMIT_TMP_MIB: "16",
      SWARM_LOG_LEVEL: "warn",
      SWARM_LOG_FORMAT: "json",
      SWARM_ALLOWED_HOSTS: "swarmd.internal, 10.0.0.5",
      SWARM_ISOLATION: "none",
      SWARM_BWRAP: "/opt/bwrap",
      SWARM_MODELS: "/etc/swarmd/models.json",
      SWARM_MODEL_CONCURRENCY: "8, anthropic=2,openai = 4",
      SWARM_MODEL_MAX_BACKOFF_MS: "30000",
    });
    assert.deepEqual(config, {
      host: "::1",
      port: 4700,
      dataDir: "/tmp/swarmd-config-test",
      runtime: "docker",
      turnMaxMs: 5000,
      tracing: null,
      memberTimeoutMs: 7000,
      hibernateAfterMs: 0,
      startConcurrency: 3,
      poolSize: 0,
      token: "s3cret",
      bodyLimitBytes: 2048,
      mcp: { maxSessions: 8, idleMs: 60_000 },
      inspect: true,
      inspectPort: 8181,
      docker: { image: "img:1" },
      limits: { pids: 64, memoryMiB: 256, cpus: 0.5, diskMiB: 100, tmpMiB: 16 },
      logLevel: "warn",
      logFormat: "json",
      allowedHosts: ["swarmd.internal", "10.0.0.5"],
      isolation: "none",
      bwrap: "/opt/bwrap",
      modelsFile: "/etc/swarmd/models.json",
      pacing: { concurrency: 8, perProvider: { anthropic: 2, openai: 4 }, maxBackoffMs: 30_000 },
    });
  });

  it("refuses a model concurrency of zero or that does not parse, naming SWARM_MODEL_CONCURRENCY", () => {
    for (const value of ["0", "8,anthropic=0", "eight", "8,anthropic"]) {
      assert.throws(
        () => loadConfig({ SWARM_MODEL_CONCURRENCY: value }),
        (err: unknown) => isSwarmError(err, "CONFIG_INVALID") && /SWARM_MODEL_CONCURRENCY/.test(err.message),
        value,
      );
    }
  });

  it("takes an empty variable as unset, not as zero", () => {
    const config = loadConfig({ SWARM_PORT: "", SWARM_TURN_MAX_MS: "", SWARM_TOKEN: "" });
    assert.equal(config.port, 4600);
    assert.equal(config.turnMaxMs, 30 * 60 * 1000);
    assert.equal(config.token, undefined);
  });

  it("refuses a bad value with CONFIG_INVALID naming each variable at fault", () => {
    assert.throws(
      () =>
        loadConfig({
          SWARM_PORT: "70000",
          SWARM_RUNTIME: "vm",
          SWARM_TURN_MAX_MS: "soon",
          SWARM_START_CONCURRENCY: "0",
          SWARM_POOL_SIZE: "-1",
          SWARM_HIBERNATE_AFTER_MS: "-1",
          SWARM_LOG_FORMAT: "xml",
        }),
      (err: unknown) => {
        assert.ok(isSwarmError(err, "CONFIG_INVALID"), String(err));
        for (const name of [
          "SWARM_PORT",
          "SWARM_RUNTIME",
          "SWARM_TURN_MAX_MS",
          "SWARM_START_CONCURRENCY",
          "SWARM_POOL_SIZE",
          "SWARM_HIBERNATE_AFTER_MS",
          "SWARM_LOG_FORMAT",
        ])
          assert.match(err.message, new RegExp(name));
        return true;
      },
    );
  });

  it("reads the cluster runtime's settings, refusing a missing manager and plain TCP off loopback", () => {
    const refused = (env: Record<string, string>, pattern: RegExp) =>
      assert.throws(
        () => loadConfig({ SWARM_RUNTIME: "cluster", ...env }),
        (err: unknown) => {
          assert.ok(isSwarmError(err, "CONFIG_INVALID"), String(err));
          assert.match(err.message, pattern);
          return true;
        },
      );
    refused({}, /SWARM_CLUSTER_MANAGER/);
    refused(
      { SWARM_CLUSTER_MANAGER: "unix:///m.sock", SWARM_CLUSTER_NODES: "abc" },
      /SWARM_CLUSTER_NODES: "abc" is not nodeId=address/,
    );
    refused({ SWARM_CLUSTER_MANAGER: "unix:///m.sock", SWARM_CLUSTER_RESERVE: "2" }, /SWARM_CLUSTER_RESERVE/);
    const config = loadConfig({
      SWARM_RUNTIME: "cluster",
      SWARM_CLUSTER_MANAGER: "tcp://198.18.0.11:2376",
      SWARM_CLUSTER_NODES: "n1=tcp://198.18.0.11:2376,n2=tcp://198.18.0.12:2376",
      SWARM_CLUSTER_LOCAL_WAIT_MS: "500",
    });
    assert.deepEqual(config.cluster, {
      manager: "tcp://198.18.0.11:2376",
      nodes: { n1: "tcp://198.18.0.11:2376", n2: "tcp://198.18.0.12:2376" },
      tlsDir: undefined,
      localWaitMs: 500,
      network: undefined,
      reserve: 0.05,
    });
    assert.equal(loadConfig({}).cluster, undefined);
    // An engine's API is root on its node: plain TCP only to loopback and the test range.
    assert.throws(
      () => engineOptions("tcp://10.1.2.3:2375", {}, "SWARM_CLUSTER_MANAGER"),
      (err: unknown) => isSwarmError(err, "CONFIG_INVALID") && /SWARM_CLUSTER_TLS_DIR/.test(err.message),
    );
    assert.deepEqual(engineOptions("tcp://127.0.0.1:2375", {}, "x"), {
      protocol: "http",
      host: "127.0.0.1",
      port: 2375,
    });
    assert.deepEqual(engineOptions("unix:///run/m.sock", {}, "x"), { socketPath: "/run/m.sock" });
  });
});
