import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { CommittedBatch } from "../ledger/ledger.ts";
import type { NodeInfo } from "../sandbox/runtime.ts";
import { AGENT_STATES, type AgentState } from "../swarm-api.ts";
import { type CommittedCounters, countCommitted } from "./committed-events.ts";
import { NodeSampler, type NodeSamplerOptions, type NodeSource } from "./node-sampler.ts";

/** Agents the daemon knows, by state: what `swarmd_agents` shows at each scrape. */
export type AgentCounts = Record<AgentState, number>;

/** Default metrics of prom-client that break Prometheus's naming rules (see the constructor). */
const TOTAL_NAMED_GAUGES = [
  "swarmd_nodejs_active_handles_total",
  "swarmd_nodejs_active_requests_total",
  "swarmd_nodejs_active_resources_total",
];

/** Seconds: from a cached read (1 ms) to a long-polled result or a docker provision (a minute). */
const CALL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds: an fsync'd LevelDB batch, alone or behind the one in flight. */
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Appends merged into one batch by group commit. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const MiB = 1024 * 1024;

/** The per-node gauges: each reads one number of a `NodeInfo`. */
const NODE_GAUGES: ReadonlyArray<{ name: string; help: string; value: (node: NodeInfo) => number }> = [
  {
    name: "swarmd_node_sandboxes",
    help: "Live sandboxes of this daemon on each node of its runtime (one node, local, on single-host runtimes).",
    value: (node) => node.sandboxes,
  },
  {
    name: "swarmd_node_reserved_cpus",
    help: "CPU cores the limits of this daemon's live sandboxes reserve on each node.",
    value: (node) => node.reservedCpus,
  },
  {
    name: "swarmd_node_reserved_memory_bytes",
    help: "Memory the limits of this daemon's live sandboxes reserve on each node.",
    value: (node) => node.reservedMemoryMiB * MiB,
  },
  {
    name: "swarmd_node_engine_reachable",
    help: "1 while the daemon reaches the node's container engine, else 0.",
    value: (node) => (node.engine === "reachable" ? 1 : 0),
  },
  {
    name: "swarmd_node_ready",
    help: "1 while the node's state is ready, else 0.",
    value: (node) => (node.state === "ready" ? 1 : 0),
  },
];

/**
 * The daemon's Prometheus metrics: one registry per daemon (never prom-client's global one, so a
 * test process can hold several daemons), every metric named `swarmd_…`. The rest of the daemon
 * never imports prom-client: it is handed the hooks below (bound, so they can be passed as they
 * are) and the gauges read their sources when scraped.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  #agents: (() => AgentCounts) | undefined;
  #sseClients: (() => number) | undefined;
  #storageFull: (() => boolean) | undefined;
  #nodes: NodeSampler | undefined;
  readonly #nodeSampling: NodeSamplerOptions;

  readonly #requests: Histogram<"operation" | "status">;
  readonly #sandboxCalls: Histogram<"runtime" | "operation">;
  readonly #appendLatency: Histogram;
  readonly #batchAppends: Histogram;
  readonly #reconnects: Counter;
  readonly #dropped: Counter;
  /** What the ledger's committed events move; `committed-events.ts` says which event moves which. */
  readonly #counted: CommittedCounters;

  /** `nodeSampling`: how the node gauges cache the runtime's answer (node-sampler.ts; tests shorten it). */
  constructor(options: { nodeSampling?: NodeSamplerOptions } = {}) {
    this.#nodeSampling = options.nodeSampling ?? {};
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: "swarmd_" });
    // Gauges named `_total` fail `promtool check metrics` (only counters may end so); each is the
    // sum over `type` of the gauge of the same name without it, which stays.
    for (const name of TOTAL_NAMED_GAUGES) this.registry.removeSingleMetric(name);
    const agents = () => this.#agents?.();
    new Gauge({
      name: "swarmd_agents",
      help: "Agents the daemon knows (every run it holds, ended agents included), by state.",
      labelNames: ["state"],
      registers,
      collect() {
        const counts = agents();
        if (counts) for (const state of AGENT_STATES) this.set({ state }, counts[state]);
      },
    });
    const sseClients = () => this.#sseClients?.();
    new Gauge({
      name: "swarmd_sse_clients",
      help: "Open event streams (GET /runs/:runId/events).",
      registers,
      collect() {
        const open = sseClients();
        if (open !== undefined) this.set(open);
      },
    });
    const storageFull = () => this.#storageFull?.();
    new Gauge({
      name: "swarmd_storage_full",
      help: "1 while the data folder's disk has no room and writes are refused (507 STORAGE_FULL), else 0.",
      registers,
      collect() {
        const full = storageFull();
        if (full !== undefined) this.set(full ? 1 : 0);
      },
    });
    // Read at each scrape through the sampler: a slow runtime makes them stale or absent, never the scrape slow.
    const nodes = () => this.#nodes?.read();
    for (const { name, help, value } of NODE_GAUGES) {
      new Gauge({
        name,
        help,
        labelNames: ["node"],
        registers,
        async collect() {
          const answer = await nodes();
          this.reset();
          for (const node of answer ?? []) this.set({ node: node.id }, value(node));
        },
      });
    }
    this.#dropped = new Counter({
      name: "swarmd_sse_ephemeral_events_dropped_total",
      help: "Ephemeral events not sent to an event-stream client because it was behind (persisted ones are never dropped).",
      registers,
    });
    this.#requests = new Histogram({
      name: "swarmd_control_request_duration_seconds",
      help: "HTTP API requests by operation and status class (2xx, 4xx, 5xx), from arrival to the last byte of the answer.",
      labelNames: ["operation", "status"],
      buckets: CALL_BUCKETS,
      registers,
    });
    this.#sandboxCalls = new Histogram({
      name: "swarmd_sandbox_operation_duration_seconds",
      help: "Calls of the sandbox runtime by runtime and operation, failed ones included.",
      labelNames: ["runtime", "operation"],
      buckets: CALL_BUCKETS,
      registers,
    });
    this.#appendLatency = new Histogram({
      name: "swarmd_ledger_append_duration_seconds",
      help: "Ledger appends from the call to their durable commit, waiting for the batch ahead included.",
      buckets: APPEND_BUCKETS,
      registers,
    });
    this.#batchAppends = new Histogram({
      name: "swarmd_ledger_batch_appends",
      help: "Appends merged into one atomic ledger batch (group commit).",
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.#reconnects = new Counter({
      name: "swarmd_harness_reconnects_total",
      help: "Attempts to open again a harness connection that dropped or did not open.",
      registers,
    });
    this.#counted = {
      spawns: new Counter({
        name: "swarmd_agents_spawned_total",
        help: "Agents spawned, roots and children, from agent_spawned events; a spawn a budget refused counts too (and in swarmd_budget_denials_total).",
        registers,
      }),
      budgetDenials: new Counter({
        name: "swarmd_budget_denials_total",
        help: "Spawns refused and model calls held by a budget, from budget_denied events, by the budget that ran out.",
        labelNames: ["dimension"],
        registers,
      }),
      tokens: new Counter({
        name: "swarmd_model_tokens_total",
        help: "Model tokens metered by the gateway, from model_usage events, by kind (input, output, cache_read, cache_write).",
        labelNames: ["provider", "model", "kind"],
        registers,
      }),
      costUsd: new Counter({
        name: "swarmd_model_cost_usd_total",
        help: "Model spending in US dollars at the model's prices, from model_usage events.",
        labelNames: ["provider", "model"],
        registers,
      }),
    };
  }

  /**
   * The gauges' sources, read at each scrape: the service's agent counts, the server's open streams,
   * whether the ledger finds the disk full, the runtime's nodes.
   */
  watch(sources: {
    agents?: () => AgentCounts;
    sseClients?: () => number;
    storageFull?: () => boolean;
    nodes?: NodeSource;
  }): void {
    if (sources.agents) this.#agents = sources.agents;
    if (sources.sseClients) this.#sseClients = sources.sseClients;
    if (sources.storageFull) this.#storageFull = sources.storageFull;
    if (sources.nodes) this.#nodes = new NodeSampler(sources.nodes, this.#nodeSampling);
  }

  /** `LedgerOptions.onCommit`. */
  readonly ledgerCommitted = (batch: CommittedBatch): void => {
    this.#batchAppends.observe(batch.appends);
    for (const seconds of batch.appendSeconds) this.#appendLatency.observe(seconds);
    countCommitted(batch.events, this.#counted);
  };

  /** One HTTP request answered, `operation` as `request-metrics.ts` names it. */
  readonly requestEnded = (operation: string, statusCode: number, seconds: number): void => {
    this.#requests.observe({ operation, status: `${Math.floor(statusCode / 100)}xx` }, seconds);
  };

  /** One call of the sandbox runtime ended (`observed-runtime.ts`). */
  readonly sandboxCallEnded = (runtime: string, operation: string, seconds: number): void => {
    this.#sandboxCalls.observe({ runtime, operation }, seconds);
  };

  /** A harness actor tries to open its connection again (`HarnessActorDeps.onReconnect`). */
  readonly harnessReconnected = (): void => {
    this.#reconnects.inc();
  };

  /** An event stream dropped an ephemeral event for a client that was behind. */
  readonly ephemeralDropped = (): void => {
    this.#dropped.inc();
  };
}
