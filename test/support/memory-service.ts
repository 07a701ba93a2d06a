import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSwarmService, type SwarmService } from "../../actors/swarm-service.ts";
import { type ErrorCode, isSwarmError } from "../../src/errors.ts";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import type { Ledger, LedgerEvent } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { createResultStore } from "../../src/results/result-store.ts";
import { createMemoryRuntime, type MemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { AgentView } from "../../src/swarm-api.ts";
import { createWaitList } from "./wait-list.ts";

/**
 * The service as the daemon builds it, minus HTTP: a real LevelDB ledger and result store in a
 * temporary folder, sandboxes from the memory runtime. Agents are scripted, so a test takes
 * milliseconds where the process runtime takes seconds.
 */
export interface MemoryService {
  /** The service now (a new one after `restart`). */
  readonly service: SwarmService;
  readonly ledger: Ledger;
  readonly runtime: MemoryRuntime;
  /** The data folder: the ledger under `ledger/`, results under `results/`. */
  readonly dataDir: string;
  /** Every persisted event of the run, in seq order. */
  events(runId: string): Promise<LedgerEvent[]>;
  /** The first persisted event of the run that matches (each event is offered once, in seq order), stored or to come. */
  eventWhen(
    runId: string,
    match: (event: LedgerEvent) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<LedgerEvent>;
  /** The agent's view once `match` holds for it; checked at each event of its run. */
  agentWhen(agentId: string, match: (view: AgentView) => boolean, what: string, timeoutMs?: number): Promise<AgentView>;
  /**
   * What a restarted daemon does: close the service and the ledger, open the ledger again from
   * its folder, make a new service on it, the same results and the same runtime (whose sandboxes
   * lived on), and restore. `whileDown` runs between the two (a sandbox vanishes, ...). Resolves
   * with the number of runs restored.
   */
  restart(whileDown?: () => Promise<void>): Promise<number>;
  stop(): Promise<void>;
}

export interface MemoryServiceOptions {
  /** SWARM_MEMBER_TIMEOUT_MS of the service (default 60 s). */
  memberTimeoutMs?: number;
  /** The runtime as the service sees it: wrap the memory runtime to delay or break an operation. */
  wrap?: (runtime: SandboxRuntime) => SandboxRuntime;
  /** The model gateway for each (re)started service: its models file and pacing. Default: pi-ai's built-in models. */
  gateway?: () => ModelGateway;
}

export async function startMemoryService(options: MemoryServiceOptions = {}): Promise<MemoryService> {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-service-"));
  const runtime = createMemoryRuntime();
  const seen = options.wrap?.(runtime) ?? runtime;
  const results = createResultStore(dataDir);
  const log = process.env.SWARM_TEST_LOG ? (message: string) => console.error(`[swarmd] ${message}`) : undefined;
  const open = async () => {
    const ledger = await openLedger(join(dataDir, "ledger"));
    const service = createSwarmService({
      config: { dataDir, turnMaxMs: 1_800_000, memberTimeoutMs: options.memberTimeoutMs },
      runtime: seen,
      ledger,
      results,
      log,
      gateway: options.gateway?.(),
    });
    return { ledger, service };
  };
  let current = await open();
  // Found in the snapshots, not with getAgent, which would ask the agent's harness for its stats.
  const runOf = (agentId: string) =>
    current.ledger
      .runIds()
      .find(
        (runId) =>
          current.service.hasRun(runId) && current.service.getRun(runId).agents.some((a) => a.agentId === agentId),
      );

  return {
    get service() {
      return current.service;
    },
    get ledger() {
      return current.ledger;
    },
    runtime,
    dataDir,
    async events(runId) {
      const events: LedgerEvent[] = [];
      for await (const event of current.ledger.iterate(runId, 0)) events.push(event);
      return events;
    },
    async eventWhen(runId, match, what, timeoutMs = 5_000) {
      const waits = createWaitList();
      let found: LedgerEvent | undefined;
      let last = 0;
      const offer = (event: LedgerEvent) => {
        if (found || event.seq <= last) return;
        last = event.seq;
        if (match(event)) found = event;
      };
      // Replay, then live: what commits during the replay waits until the replay is over.
      let held: LedgerEvent[] | undefined = [];
      const unsubscribe = current.ledger.subscribe(runId, (event) => {
        if (!event.persisted) return;
        if (held) held.push(event);
        else offer(event);
        waits.wake();
      });
      try {
        for await (const event of current.ledger.iterate(runId, 0)) offer(event);
        held.forEach(offer);
        held = undefined;
        return await waits.until(
          () => found,
          timeoutMs,
          () => `run ${runId}: no event ${what}`,
        );
      } finally {
        unsubscribe();
      }
    },
    async agentWhen(agentId, match, what, timeoutMs = 5_000) {
      const { ledger, service } = current;
      const runId = runOf(agentId);
      if (!runId) throw new Error(`agent ${agentId} is in no run`);
      const waits = createWaitList();
      const unsubscribe = ledger.subscribe(runId, (event) => event.persisted && waits.wake());
      const view = () => service.getRun(runId).agents.find((a) => a.agentId === agentId)!;
      try {
        return await waits.until(
          () => (match(view()) ? view() : undefined),
          timeoutMs,
          () => `agent ${agentId}: ${what}, but it is ${JSON.stringify(view())}`,
        );
      } finally {
        unsubscribe();
      }
    },
    async restart(whileDown) {
      await current.service.close();
      await current.ledger.close();
      await whileDown?.();
      current = await open();
      return current.service.restore();
    },
    async stop() {
      await current.service.close();
      await runtime.destroy();
      await current.ledger.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A spec that answers each prompt with the prompt itself. */
export const echoSpec = (name: string) => ({ name, script: [] });

/**
 * Assert the call fails with a `SwarmError` of `code`, as a rejected promise: a service method
 * that answers later never throws at the caller (an in-process caller using `.catch()` relies on it).
 */
export function rejectsWithCode(call: () => Promise<unknown>, code: ErrorCode): Promise<void> {
  let answer: Promise<unknown> = Promise.resolve();
  assert.doesNotThrow(() => {
    answer = call();
  }, "the service answers with a rejected promise, not a throw");
  return assert.rejects(answer, (err) => isSwarmError(err, code));
}

/** A run whose agents all stay live and idle: root → (a → a1), b. */
export async function keptTree(s: MemoryService) {
  const { runId, rootAgentId: root } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
  const spawn = async (parentAgentId: string, name: string) =>
    (await s.service.spawn(runId, { parentAgentId, spec: echoSpec(name), keepAlive: true })).agentId;
  const a = await spawn(root, "a");
  const a1 = await spawn(a, "a1");
  const b = await spawn(root, "b");
  for (const id of [root, a, a1, b]) await s.agentWhen(id, (v) => v.state === "running", "runs");
  return { runId, root, a, a1, b };
}
