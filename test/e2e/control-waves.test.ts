/**
 * A big wave does not hold the daemon: a subtree pause of hundreds of agents at one depth is sent a
 * chunk at a time, and another run's request is answered before the wave has reached its last
 * member (spec §3 rule 6). Simulated runtime, whatever `SWARM_E2E_RUNTIME` says: the sandboxes cost
 * nothing, so only the control plane is in the way.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { createRuntime, type Daemon, type Json, type Reply, startDaemon, waitForState } from "../support/daemon.ts";

const CHILDREN = 800;
const kept = (name: string) => ({ name, script: [] });

describe("controls over HTTP: a big wave leaves room for other requests (simulated runtime)", () => {
  let d: Daemon;
  /** Sandbox freezes begun so far, and a hook called at each. */
  let freezes = 0;
  let onFreeze = () => {};
  before(async () => {
    d = await startDaemon({
      runtime: (dataDir): SandboxRuntime => {
        const inner = createRuntime("simulated", dataDir);
        return Object.assign(Object.create(inner) as SandboxRuntime, {
          freeze(sandboxId: string, signal: AbortSignal) {
            freezes += 1;
            onFreeze();
            return inner.freeze(sandboxId, signal);
          },
        });
      },
    });
  });
  after(() => d.stop());

  it("answers another run's request while a subtree pause is still sending one wave of 800 agents", async () => {
    const big = await d.call("POST", "/runs", {
      spec: kept("root"),
      keepAlive: true,
      budget: { maxAgents: CHILDREN + 1, spawnDepth: 1 },
    });
    assert.equal(big.status, 202);
    const { runId, rootAgentId } = big.body as { runId: string; rootAgentId: string };
    const other = (await d.call("POST", "/runs", { spec: kept("other"), keepAlive: true })).body as {
      rootAgentId: string;
    };
    const children: string[] = [];
    for (let i = 0; i < CHILDREN; i += 8) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(8, CHILDREN - i) }, (_, k) =>
          d.call("POST", `/runs/${runId}/agents`, {
            parentAgentId: rootAgentId,
            spec: kept(`c${i + k}`),
            keepAlive: true,
          }),
        ),
      );
      for (const r of batch) children.push(r.body.agentId as string);
    }
    for (const id of [rootAgentId, other.rootAgentId, ...children]) await waitForState(d, id, "running");

    // Once the wave of children has begun (the root's freeze is the first), the other run is asked
    // for its agent; how many freezes had begun when it answers says where the wave was.
    let answered: Promise<Reply<Json>> | undefined;
    let freezesAtAnswer = 0;
    freezes = 0;
    onFreeze = () => {
      if (freezes !== 2) return;
      answered = d.call("GET", `/agents/${other.rootAgentId}`).then((reply) => {
        freezesAtAnswer = freezes;
        return reply;
      });
    };
    const paused = await d.call("POST", `/agents/${rootAgentId}/pause`, { scope: "subtree" });
    onFreeze = () => {};
    assert.equal(paused.status, 202);
    assert.equal(paused.body.results.length, CHILDREN + 1);
    assert.ok(paused.body.results.every((r: { outcome: string }) => r.outcome === "applied"));
    assert.ok(answered, "the wave of children began");
    const reply = await answered;
    assert.equal(reply.status, 200);
    assert.equal(reply.body.state, "running");
    assert.ok(
      freezesAtAnswer < CHILDREN + 1,
      `the other run was answered before the wave reached its last member (${freezesAtAnswer} of ${CHILDREN + 1} freezes had begun)`,
    );
    assert.equal(freezes, CHILDREN + 1);
  });
});
