import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DEFAULT_SANDBOX_LIMITS } from "../../src/sandbox/runtime.ts";
import { createRuntime, type Daemon, sandboxRuntime, startDaemon, waitForState } from "../support/daemon.ts";

/**
 * Attack: an agent (or a spawn made in its name) asks for a child with more than it has itself
 * (network, another image, tools, env, bigger limits) to climb out of what the operator gave it.
 */
describe("security: a child never exceeds its parent", () => {
  let d: Daemon;
  const ceiling = { ...DEFAULT_SANDBOX_LIMITS, memoryMiB: 1024 };
  before(async () => {
    // The security suites run on a real runtime (process, or docker by SWARM_E2E_RUNTIME).
    d = await startDaemon({ limits: ceiling, runtime: (dataDir) => createRuntime(sandboxRuntime(), dataDir) });
  });
  after(() => d.stop());

  const parentSpec = {
    name: "parent",
    script: [],
    tools: ["bash", "spawn_agent", "await_result"],
    env: { SHARED: "yes" },
    limits: { memoryMiB: 512, pids: 128 },
  };

  async function liveRoot(spec: Record<string, unknown> = parentSpec) {
    const created = await d.call("POST", "/runs", { spec, keepAlive: true });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    await waitForState(d, created.body.rootAgentId, "running");
    return created.body as { runId: string; rootAgentId: string };
  }

  it("refuses over HTTP, with a 400 naming the field, every ask above the parent", async () => {
    const root = await liveRoot();
    const asks: Array<[Record<string, unknown>, RegExp]> = [
      [{ network: true }, /body\.spec\.network/],
      [{ image: "another:1" }, /body\.spec\.image/],
      [{ tools: ["bash", "write"] }, /body\.spec\.tools: write/],
      [{ env: { EXTRA: "1" } }, /body\.spec\.env\.EXTRA/],
      [{ env: { SHARED: "changed" } }, /body\.spec\.env\.SHARED/],
      [{ limits: { memoryMiB: 513 } }, /body\.spec\.limits\.memoryMiB: 513 is above the parent agent's limit of 512/],
      [{ limits: { pids: 129 } }, /body\.spec\.limits\.pids/],
    ];
    for (const [ask, field] of asks) {
      const spawned = await d.call("POST", `/runs/${root.runId}/agents`, {
        parentAgentId: root.rootAgentId,
        spec: { name: "child", script: [], ...ask },
        prompt: "x",
      });
      assert.equal(spawned.status, 400, `${JSON.stringify(ask)} → ${JSON.stringify(spawned.body)}`);
      assert.match(spawned.body.error, field);
    }
    // Nothing was recorded for the refused asks.
    assert.equal((await d.call("GET", `/runs/${root.runId}`)).body.agents.length, 1);
  });

  it("a child that asks for nothing gets its parent's grants, not the defaults", async () => {
    const root = await liveRoot();
    const child = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: {
        name: "child",
        script: [
          { tool: "write", args: { path: "planted.txt", content: "x" } },
          {
            tool: "bash",
            args: { command: "test -e planted.txt && echo written || echo absent; echo shared=$SHARED" },
          },
          { text: "{{lastToolResult}}" },
        ],
      },
      prompt: "try",
    });
    assert.equal(child.status, 202);
    const result = await d.call("GET", `/agents/${child.body.agentId}/result?wait=60`);
    assert.equal(
      result.body.result,
      "absent\nshared=yes\n",
      "no write tool (the parent has none), and the parent's env",
    );
  });

  it("refuses through the agent's own spawn_agent tool, as a tool error", async () => {
    const root = await liveRoot({
      ...parentSpec,
      script: [
        { tool: "spawn_agent", args: { spec: { name: "escape", script: [], network: true }, prompt: "x" } },
        { text: "{{lastToolResult}}" },
      ],
    });
    await d.call("POST", `/agents/${root.rootAgentId}/prompt`, { text: "go" });
    const result = await d.call("GET", `/agents/${root.rootAgentId}/result?wait=60`);
    assert.match(result.body.result, /params\.spec\.network: the parent agent has no network/);
    assert.equal((await d.call("GET", `/runs/${root.runId}`)).body.agents.length, 1, "no child was made");
  });

  it("an operator's root stays within the daemon's limits", async () => {
    const created = await d.call("POST", "/runs", { spec: { name: "big", script: [], limits: { memoryMiB: 2048 } } });
    assert.equal(created.status, 400);
    assert.match(created.body.error, /body\.spec\.limits\.memoryMiB: 2048 is above the daemon's limit/);
  });

  it("refuses spec variables that change how programs load, naming the field", async () => {
    for (const name of [
      "LD_PRELOAD",
      "LD_LIBRARY_PATH",
      "NODE_OPTIONS",
      "BASH_ENV",
      "ENV",
      "PYTHONSTARTUP",
      "PERL5OPT",
      "NODE_PATH",
      "SWARMD_SANDBOX",
      "SWARMD_USER_NET",
    ]) {
      const created = await d.call("POST", "/runs", {
        spec: { name: "x", script: [], env: { [name]: "/work/evil.so" } },
      });
      assert.equal(created.status, 400, name);
      assert.match(created.body.error, new RegExp(`body\\.spec\\.env\\.${name}: changes how programs load or start`));
    }
    // A NUL would end the value early in the argument list bwrap reads the environment from.
    const nul = await d.call("POST", "/runs", { spec: { name: "x", script: [], env: { A: "one\u0000--setenv" } } });
    assert.equal(nul.status, 400);
    assert.match(nul.body.error, /body\.spec\.env\.A: must not contain a NUL character/);
  });
});
