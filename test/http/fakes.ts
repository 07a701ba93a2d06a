import { setImmediate as tick } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import { buildServer, type ServerConfig } from "../../src/http/build-server.ts";
import type { EventSource, LedgerEvent, LiveEvent } from "../../src/http/event-source.ts";
import { storedEventJson } from "../../src/ledger/stored-event.ts";
import type { AgentView, NodeView, PermissionView, ResultView, RunSummary, SwarmApi } from "../../src/swarm-api.ts";

export const RUN_ID = "r_1";
export const ROOT_ID = "a_1";

export const AGENT: AgentView = {
  agentId: ROOT_ID,
  runId: RUN_ID,
  parentAgentId: null,
  depth: 0,
  spawnIndex: 0,
  state: "running",
  specName: "echo",
  sandboxId: "0b7e2a4c-0000-4000-8000-000000000001",
  createdAt: 1_700_000_000_000,
  endedAt: null,
  outcome: null,
  pendingPermissions: [],
  usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.00002, calls: 1 },
  subtreeUsage: {
    inputTokens: 10,
    outputTokens: 2,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: 0.00002,
    calls: 1,
  },
  toolErrors: 0,
};

export const PERMISSION: PermissionView = {
  requestId: "p_0123abcd",
  runId: RUN_ID,
  agentId: ROOT_ID,
  tool: "bash",
  args: { command: "rm -rf build" },
  at: 1_700_000_000_500,
  expiresAt: null,
  state: "pending",
  decision: null,
  message: null,
  by: null,
  resolvedAt: null,
};

export const RUN_SUMMARY: RunSummary = {
  runId: RUN_ID,
  rootAgentId: ROOT_ID,
  specName: "echo",
  createdAt: 1_700_000_000_000,
  states: { spawning: 0, provisioning: 0, running: 1, paused: 0, done: 0, aborted: 0 },
  agents: 1,
  live: 1,
  usage: AGENT.usage,
};

export const LOCAL_NODE: NodeView = {
  id: "local",
  hostname: "test-host",
  state: "ready",
  availability: "active",
  sandboxes: 1,
  cpus: 4,
  memoryMiB: 8192,
  reservedCpus: 1,
  reservedMemoryMiB: 2048,
  engine: "reachable",
};

export const NO_CAPS = { maxTokens: null, maxCostUsd: null, remainingTokens: null, remainingCostUsd: null };

export const SETTLED: ResultView = {
  agentId: ROOT_ID,
  state: "settled",
  outcome: "success",
  resultRef: `fs://${ROOT_ID}/result.md`,
  result: "hello",
};
export const PENDING: ResultView = { agentId: ROOT_ID, state: "pending", outcome: null, resultRef: null, result: null };

type Method = keyof SwarmApi;

/**
 * A SwarmApi that answers canned values and records every call. `fail(method, err)` makes the next
 * calls of that method throw, which is how the tests drive each error row of spec section 7.
 */
export function createFakeSwarm() {
  const calls: Array<{ method: Method; args: unknown[] }> = [];
  const failures = new Map<Method, Error>();
  let result: ResultView = SETTLED;
  /** Runs that exist: r_1 until a purge removes it. */
  const runs = new Set([RUN_ID]);
  /** Resolves with whether the signal aborted, each time `result` ends a wait. */
  const waits: Array<Promise<"aborted" | "timeout">> = [];

  function record(method: Method, ...args: unknown[]): void {
    calls.push({ method, args });
    const err = failures.get(method);
    if (err) throw err;
  }

  const api: SwarmApi = {
    async createRun(request) {
      record("createRun", request);
      return { runId: RUN_ID, rootAgentId: ROOT_ID, state: "provisioning" };
    },
    getRun(runId) {
      record("getRun", runId);
      return { runId, rootAgentId: ROOT_ID, asOf: 7, agents: [AGENT], usage: { ...AGENT.usage } };
    },
    async deleteRun(runId, options) {
      record("deleteRun", runId, options);
      if (options?.purge) runs.delete(runId);
    },
    async spawn(runId, request) {
      record("spawn", runId, request);
      return { agentId: "a_2", state: request.waitFor ? "spawning" : "provisioning" };
    },
    async getAgent(agentId) {
      record("getAgent", agentId);
      return { ...AGENT, agentId, prompt: null, waitFor: [], budget: NO_CAPS, sessionStats: { tokens: 12 } };
    },
    async setBudget(agentId, caps) {
      record("setBudget", agentId, caps);
      return {
        agentId,
        budget: { ...NO_CAPS, maxTokens: caps.maxTokens ?? null, maxCostUsd: caps.maxCostUsd ?? null },
      };
    },
    async prompt(agentId, text) {
      record("prompt", agentId, text);
    },
    async steer(agentId, request) {
      record("steer", agentId, request);
      return { results: [{ agentId, outcome: "applied" }], delivery: "steer" };
    },
    async pause(agentId, scope) {
      record("pause", agentId, scope);
      return { results: [{ agentId, outcome: "applied" }] };
    },
    async resume(agentId, scope) {
      record("resume", agentId, scope);
      return { results: [{ agentId, outcome: "applied" }] };
    },
    async stop(agentId, request) {
      record("stop", agentId, request);
      return { results: [{ agentId, outcome: "applied" }] };
    },
    async result(agentId, waitSeconds, signal) {
      record("result", agentId, waitSeconds);
      if (result.state === "settled" || waitSeconds === 0) return result;
      const ended = new Promise<"aborted" | "timeout">((resolve) => {
        const timer = setTimeout(() => resolve("timeout"), waitSeconds * 1000);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve("aborted");
        });
      });
      waits.push(ended);
      await ended;
      return result;
    },
    listRuns(limit) {
      record("listRuns", limit);
      return { runs: [RUN_SUMMARY] };
    },
    getMachine(agentId) {
      record("getMachine", agentId);
      return {
        agentId,
        running: true,
        value: { live: { running: "idle" } },
        tags: ["live", "running"],
        transitions: [
          {
            at: 1_700_000_000_100,
            event: "xstate.done.actor.0.agent.unforked.provisioning",
            value: { live: { running: "idle" } },
          },
        ],
      };
    },
    listPermissions(runId, state) {
      record("listPermissions", runId, state);
      return { permissions: [PERMISSION] };
    },
    async resolvePermission(agentId, requestId, answer) {
      record("resolvePermission", agentId, requestId, answer);
      return {
        ...PERMISSION,
        agentId,
        requestId,
        state: "resolved",
        decision: answer.decision,
        message: answer.message ?? null,
        by: "operator",
        resolvedAt: PERMISSION.at + 1,
      };
    },
    hasRun(runId) {
      record("hasRun", runId);
      return runs.has(runId);
    },
    listModels(filter) {
      record("listModels", filter);
      return { models: [] };
    },
    async listNodes() {
      record("listNodes");
      return { nodes: [LOCAL_NODE] };
    },
    async fork(agentId, request) {
      record("fork", agentId, request);
      return { agentIds: (request.prompts ?? [request.prompt]).map((_, i) => `a_f${i + 1}`) };
    },
    async changes(agentId) {
      record("changes", agentId);
      return { agentId, forkedFrom: { agentId: ROOT_ID, forkPoint: { turn: 1 } }, files: [], diffBytes: 0 };
    },
    async adopt(agentId, request) {
      record("adopt", agentId, request);
      return { agentId, from: request.from, files: [], skipped: [] };
    },
    async waitFor(runId, request) {
      record("waitFor", runId, request);
      return { results: [], winner: null };
    },
  };

  return {
    api,
    calls,
    waits,
    fail(method: Method, err: Error) {
      failures.set(method, err);
    },
    setResult(view: ResultView) {
      result = view;
    },
    /** Arguments of the last call of `method`. */
    last(method: Method): unknown[] | undefined {
      return calls.filter((c) => c.method === method).at(-1)?.args;
    },
  };
}

/**
 * An in-memory ledger. `iterate` yields to the event loop between events, so appends made meanwhile
 * land both in the replay and in the subscription: the seam's deduplication is exercised, not
 * assumed. By default it reads the live array; `snapshot` makes it stop where the ledger ended when
 * it began, as a LevelDB iterator does.
 */
export function createFakeEvents(options: { snapshot?: boolean } = {}) {
  const ledgers = new Map<string, LedgerEvent[]>();
  const listeners = new Map<string, Set<(e: LiveEvent) => void>>();
  const ledger = (runId: string) => ledgers.get(runId) ?? ledgers.set(runId, []).get(runId) ?? [];

  const source: EventSource = {
    async *iterate(runId, afterSeq) {
      const events = ledger(runId);
      const end = options.snapshot ? events.length : Infinity;
      for (let i = afterSeq; i < Math.min(end, events.length); i++) {
        await tick();
        const e = events[i];
        if (e) yield e;
      }
    },
    async readStored(runId, afterSeq, limit, maxBytes) {
      const events = ledger(runId);
      const end = Math.min(events.length, afterSeq + limit);
      // A tick per event read, as `iterate` takes: appends made meanwhile are in this page too,
      // unless it reads a snapshot as the ledger does (none above lastSeq at the call).
      for (let i = afterSeq; i < end; i++) await tick();
      const page: string[] = [];
      let bytes = 0;
      for (const e of events.slice(afterSeq, options.snapshot ? end : afterSeq + limit)) {
        if (bytes > maxBytes) break;
        const json = storedEventJson(e.runId, e.seq, e.type, e.agentId, e.at, JSON.stringify(e.data));
        page.push(json);
        bytes += Buffer.byteLength(json);
      }
      return page;
    },
    lastSeq: (runId) => ledger(runId).length,
    subscribe(runId, listener) {
      const set = listeners.get(runId) ?? listeners.set(runId, new Set()).get(runId) ?? new Set();
      set.add(listener);
      return () => set.delete(listener);
    },
  };

  function notify(runId: string, e: LiveEvent): void {
    // A copy: a listener may unsubscribe itself (a stream cut off for being slow) while notified.
    for (const listener of [...(listeners.get(runId) ?? [])]) listener(e);
  }

  return {
    source,
    /** Commit one persisted event and notify subscribers, as the ledger does after a batch. */
    append(runId: string, type: string, agentId: string | null, data: Record<string, unknown> = {}): LedgerEvent {
      const events = ledger(runId);
      const e: LedgerEvent = {
        runId,
        seq: events.length + 1,
        type,
        agentId,
        at: 1_700_000_000_000 + events.length,
        data,
      };
      events.push(e);
      notify(runId, { persisted: true, ...e });
      return e;
    },
    ephemeral(runId: string, type: string, agentId: string | null, data: Record<string, unknown> = {}): void {
      notify(runId, { persisted: false, runId, type, agentId, data });
    },
    listenerCount: (runId: string) => listeners.get(runId)?.size ?? 0,
  };
}

export const CONFIG: ServerConfig = { bodyLimitBytes: 64 * 1024, logger: false };

/** A server over fresh fakes; close it with `t.after(() => app.close())`. */
export function setup(
  config: Partial<ServerConfig> = {},
  options: { snapshot?: boolean } = {},
): {
  app: FastifyInstance;
  swarm: ReturnType<typeof createFakeSwarm>;
  events: ReturnType<typeof createFakeEvents>;
} {
  const swarm = createFakeSwarm();
  const events = createFakeEvents(options);
  const app = buildServer({ swarm: swarm.api, events: events.source, config: { ...CONFIG, ...config } });
  return { app, swarm, events };
}
