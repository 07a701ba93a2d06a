/**
 * An agent brought into each state a control can meet it in (docs/controls.md), on the simulated
 * runtime: each call makes a new run, so a control tried on it changes nothing else. Two daemons:
 * one that never hibernates (so an idle agent stays awake) and one that hibernates at once. Their
 * runtime can hold sandbox starts (an agent stays `provisioning`) and the close that ends an agent
 * (it stays ending), until the state's `release`.
 */
import assert from "node:assert/strict";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { inbox, startGatedRun } from "./approval-runs.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "./daemon.ts";
import { pollUntil } from "./poll.ts";
import { openEvents } from "./sse-client.ts";

/** An agent in a state: where it lives, and what lets go of what holds it there. */
export interface Target {
  d: Daemon;
  runId: string;
  agentId: string;
  /** A pending approval request of the agent, where the state has one. */
  requestId?: string;
  /** Lets go of a held start or close (the agent then goes on as it would have). */
  release(): void;
}

/** What holds sandboxes: starts while `starts` is set, and the first close of the sandboxes named. */
export interface Holds {
  starts: boolean;
  closeOf: Set<string>;
  /** Lets go of what waits for the sandbox (a start or a close). */
  release(sandboxId: string): void;
  /** Lets go of everything and holds nothing more. */
  releaseAll(): void;
}

function holdingRuntime(): { runtime: SandboxRuntime; holds: Holds } {
  const inner = createMemoryRuntime();
  const waiting = new Map<string, Set<() => void>>();
  const held = (sandboxId: string, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const those = waiting.get(sandboxId) ?? new Set();
      waiting.set(sandboxId, those);
      const done = () => {
        those.delete(done);
        signal.removeEventListener("abort", aborted);
        resolve();
      };
      const aborted = () => {
        those.delete(done);
        reject(signal.reason);
      };
      those.add(done);
      signal.addEventListener("abort", aborted, { once: true });
    });
  const holds: Holds = {
    starts: false,
    closeOf: new Set(),
    release(sandboxId) {
      for (const done of [...(waiting.get(sandboxId) ?? [])]) done();
    },
    releaseAll() {
      holds.starts = false;
      holds.closeOf.clear();
      for (const sandboxId of waiting.keys()) holds.release(sandboxId);
    },
  };
  const runtime: SandboxRuntime = {
    ...inner,
    async startHarness(sandboxId, signal) {
      if (holds.starts) await held(sandboxId, signal);
      return inner.startHarness(sandboxId, signal);
    },
    async close(sandboxId, signal) {
      // Only the first close waits: a stop's release of what is left goes through.
      if (holds.closeOf.delete(sandboxId)) await held(sandboxId, signal);
      return inner.close(sandboxId, signal);
    },
  };
  return { runtime, holds };
}

export interface Daemons {
  /** Never hibernates. */
  awake: Daemon;
  /** Hibernates an agent idle for 100 ms. */
  sleepy: Daemon;
  holds: Holds;
  stop(): Promise<void>;
}

export async function startDaemons(): Promise<Daemons> {
  const { runtime, holds } = holdingRuntime();
  const awake = await startDaemon({ runtime: () => runtime, startConcurrency: 8 });
  const sleepy = await startDaemon({ hibernateAfterMs: 100 });
  return {
    awake,
    sleepy,
    holds,
    async stop() {
      holds.releaseAll();
      await Promise.all([awake.stop(), sleepy.stop()]);
    },
  };
}

const KEPT = { name: "target", script: [] };
const nothing = () => undefined;

/** A keepAlive root, running and idle (no prompt). */
async function idleRoot(d: Daemon, spec: Json = KEPT, prompt?: string): Promise<Target> {
  const created = await d.call("POST", "/runs", { spec, keepAlive: true, ...(prompt ? { prompt } : {}) });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  await waitForState(d, created.body.rootAgentId, "running");
  return { d, runId: created.body.runId, agentId: created.body.rootAgentId, release: nothing };
}

async function spawnUnder(target: Target, extra: Json = {}): Promise<string> {
  const spawned = await target.d.call("POST", `/runs/${target.runId}/agents`, {
    parentAgentId: target.agentId,
    spec: KEPT,
    keepAlive: true,
    ...extra,
  });
  assert.equal(spawned.status, 202, JSON.stringify(spawned.body));
  return spawned.body.agentId;
}

/** An agent in the middle of a turn: its model's answer streams for two minutes. */
async function inTurn(d: Daemon): Promise<Target> {
  const target = await idleRoot(d, { name: "busy", script: [{ text: "slow answer", delayMs: 120_000 }] }, "go");
  const events = await openEvents(d.url, target.runId);
  try {
    await events.waitFor((m) => m.event === "turn_start" && m.data.agentId === target.agentId);
  } finally {
    events.close();
  }
  return target;
}

const tagsOf = async (d: Daemon, agentId: string): Promise<string[]> =>
  (await d.call("GET", `/agents/${agentId}/machine`)).body.tags;

/**
 * The agent states of docs/controls.md ("Agent controls"), by the label its table gives each row.
 * Each makes a new agent in that state.
 */
export const AGENT_STATES: Record<string, (ds: Daemons) => Promise<Target>> = {
  // A child waiting for a sibling's result that never settles (the sibling is never prompted).
  "`spawning`": async ({ awake }) => {
    const root = await idleRoot(awake);
    const sibling = await spawnUnder(root);
    const agentId = await spawnUnder(root, { waitFor: [sibling] });
    await waitForState(awake, agentId, "spawning");
    return { ...root, agentId };
  },
  // A child whose harness start is held.
  "`provisioning`": async ({ awake, holds }) => {
    const root = await idleRoot(awake);
    holds.starts = true;
    const agentId = await spawnUnder(root);
    await pollUntil(
      async () => (await tagsOf(awake, agentId)).includes("provisioning"),
      (yes) => yes,
      "provisioning",
    );
    return { ...root, agentId, release: () => holds.releaseAll() };
  },
  "`running`, idle": async ({ awake }) => idleRoot(awake),
  "`running`, in a turn": async ({ awake }) => inTurn(awake),
  "`running`, hibernated": async ({ sleepy }) => {
    const target = await idleRoot(sleepy);
    await pollUntil(
      async () => (await sleepy.call("GET", `/agents/${target.agentId}`)).body.hibernated === true,
      (yes) => yes,
      "hibernated",
    );
    return target;
  },
  "`paused`": async ({ awake }) => {
    const target = await idleRoot(awake);
    assert.equal((await awake.call("POST", `/agents/${target.agentId}/pause`)).status, 202);
    return target;
  },
  // A drain that waits for the turn under way (a deadline far off).
  "`running`, draining": async ({ awake }) => {
    const target = await inTurn(awake);
    const drained = await awake.call("POST", `/agents/${target.agentId}/stop`, {
      mode: "drain",
      drainTimeoutMs: 600_000,
    });
    assert.equal(drained.status, 202);
    return target;
  },
  // Its turn settled and it is finishing: the close of its sandbox is held.
  ending: async ({ awake, holds }) => {
    const created = await awake.call("POST", "/runs", { spec: KEPT });
    const agentId = created.body.rootAgentId;
    await waitForState(awake, agentId, "running");
    const sandboxId = (await awake.call("GET", `/agents/${agentId}`)).body.sandboxId;
    holds.closeOf.add(sandboxId);
    await awake.call("POST", `/agents/${agentId}/prompt`, { text: "and then end" });
    await pollUntil(
      async () => (await tagsOf(awake, agentId)).includes("ending"),
      (yes) => yes,
      "ending",
    );
    return { d: awake, runId: created.body.runId, agentId, release: () => holds.release(sandboxId) };
  },
  "`done`": async ({ awake }) => {
    const created = await awake.call("POST", "/runs", { spec: KEPT, prompt: "hello" });
    await waitForState(awake, created.body.rootAgentId, "done");
    return { d: awake, runId: created.body.runId, agentId: created.body.rootAgentId, release: nothing };
  },
  "`aborted`": async ({ awake }) => {
    const target = await idleRoot(awake);
    assert.equal((await awake.call("POST", `/agents/${target.agentId}/stop`)).status, 202);
    return target;
  },
  // Deleted with its run; then purged: the run and its agents are gone.
  "purged, or never was": async ({ awake }) => {
    const target = await idleRoot(awake);
    assert.equal((await awake.call("DELETE", `/runs/${target.runId}?purge=true`)).status, 204);
    const other = await idleRoot(awake);
    return { ...other, agentId: target.agentId };
  },
};

/** A keepAlive root whose `spawn_agent` call waits for an approval, in a run of `d`. */
export async function pendingApproval(d: Daemon): Promise<Target> {
  const run = await startGatedRun(d.call, {
    approve: [{ tool: "spawn_agent" }],
    script: [{ tool: "spawn_agent", args: { spec: { name: "kid", script: [] } } }, { text: "asked" }],
  });
  const [request] = await inbox(d.call, run.runId, 1);
  return { d, ...run, requestId: request.requestId, release: nothing };
}

/**
 * The states of an approval request of docs/controls.md ("Approvals"), by row label: where it
 * waits, and how it was resolved.
 */
export const REQUEST_STATES: Record<string, (ds: Daemons) => Promise<Target>> = {
  "pending, its agent running": async ({ awake }) => pendingApproval(awake),
  "pending, its agent paused": async ({ awake }) => {
    const target = await pendingApproval(awake);
    assert.equal((await awake.call("POST", `/agents/${target.agentId}/pause`)).status, 202);
    return target;
  },
  "pending, its agent draining": async ({ awake }) => {
    const target = await pendingApproval(awake);
    assert.equal((await awake.call("POST", `/agents/${target.agentId}/stop`, { mode: "drain" })).status, 202);
    return target;
  },
  "answered by the operator": async ({ awake }) => {
    const target = await pendingApproval(awake);
    const path = `/agents/${target.agentId}/permissions/${target.requestId}`;
    assert.equal((await awake.call("POST", path, { decision: "allow" })).status, 202);
    return target;
  },
  "denied by its agent's end": async ({ awake }) => {
    const target = await pendingApproval(awake);
    assert.equal((await awake.call("POST", `/agents/${target.agentId}/stop`)).status, 202);
    return target;
  },
  "denied by its run's deletion": async ({ awake }) => {
    const target = await pendingApproval(awake);
    assert.equal((await awake.call("DELETE", `/runs/${target.runId}`)).status, 204);
    return target;
  },
  "no such request of the agent": async ({ awake }) => ({
    ...(await idleRoot(awake)),
    requestId: "p_00000000000000000000ffff",
  }),
};

/** The states of a run of docs/controls.md ("Run controls"), by row label; `agentId` is its root. */
export const RUN_STATES: Record<string, (ds: Daemons) => Promise<Target>> = {
  "live agents": async ({ awake }) => {
    const target = await idleRoot(awake);
    await spawnUnder(target);
    return target;
  },
  "every agent ended": async ({ awake }) => {
    const created = await awake.call("POST", "/runs", { spec: KEPT, prompt: "hello" });
    await waitForState(awake, created.body.rootAgentId, "done");
    return { d: awake, runId: created.body.runId, agentId: created.body.rootAgentId, release: nothing };
  },
  deleted: async ({ awake }) => {
    const target = await idleRoot(awake);
    assert.equal((await awake.call("DELETE", `/runs/${target.runId}`)).status, 204);
    return target;
  },
  "purged, or never was": async ({ awake }) => {
    const target = await idleRoot(awake);
    assert.equal((await awake.call("DELETE", `/runs/${target.runId}?purge=true`)).status, 204);
    return target;
  },
};
