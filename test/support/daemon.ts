import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StartQueue } from "../../actors/start-queue.ts";
import { createSwarmService, type SwarmService } from "../../actors/swarm-service.ts";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import { buildServer } from "../../src/http/build-server.ts";
import { isStorageFull, type Ledger } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/level-ledger.ts";
import { DaemonMetrics } from "../../src/metrics/daemon-metrics.ts";
import { observeRuntime } from "../../src/metrics/observed-runtime.ts";
import { createResultStore } from "../../src/results/result-store.ts";
import { createDockerRuntime } from "../../src/sandbox/docker/docker-runtime.ts";
import { createMemoryRuntime } from "../../src/sandbox/memory/memory-runtime.ts";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxLimits, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { createTestClusterRuntime } from "./cluster-runtime.ts";

export interface Daemon {
  url: string;
  dataDir: string;
  service: SwarmService;
  ledger: Ledger;
  /** The runtime as the test made it (the service gets it timed for metrics). */
  runtime: SandboxRuntime;
  /** The daemon's own metrics registry and hooks; absent with `metrics: false`. */
  metrics?: DaemonMetrics;
  /** JSON request; resolves with status, headers and parsed body (undefined when empty). */
  call<T = Json>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>>;
  stop(): Promise<void>;
}

export interface DaemonOptions {
  turnMaxMs?: number;
  /** The sandbox runtime; default the one `SWARM_E2E_RUNTIME` names (`e2eRuntime`), simulated unless set. */
  runtime?: (dataDir: string) => SandboxRuntime;
  /** Default: the spec's 500, as the daemon has it. */
  slowConsumerLimit?: number;
  token?: string;
  dataDir?: string;
  /** Largest accepted request body (default 1 MiB); larger ones are a 413. */
  bodyLimitBytes?: number;
  /** The daemon's sandbox limits (SWARM_LIMIT_*); default `DEFAULT_SANDBOX_LIMITS`. */
  limits?: SandboxLimits;
  /** The model gateway (its models file, pacing); default: pi-ai's built-in models. */
  gateway?: ModelGateway;
  /** Idle time after which agents hibernate (SWARM_HIBERNATE_AFTER_MS); default: never. */
  hibernateAfterMs?: number;
  /** Sandbox starts at once (SWARM_START_CONCURRENCY); default: one per core. */
  startConcurrency?: number;
  /** `GET /metrics` and what feeds it, as the daemon has them; default true. */
  metrics?: boolean;
}

/** The whole daemon in this process, on a real loopback port, with a real ledger and the sandboxes of its runtime. */
export async function startDaemon(options: DaemonOptions = {}): Promise<Daemon> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "swarmd-e2e-"));
  const metrics = options.metrics === false ? undefined : new DaemonMetrics();
  const ledger = await openLedger(join(dataDir, "ledger"), { onCommit: metrics?.ledgerCommitted, dataDir });
  const runtime = options.runtime?.(dataDir) ?? createRuntime(e2eRuntime(), dataDir);
  const service = createSwarmService({
    config: {
      dataDir,
      turnMaxMs: options.turnMaxMs ?? 1_800_000,
      limits: options.limits,
      hibernateAfterMs: options.hibernateAfterMs,
    },
    runtime: metrics ? observeRuntime(runtime, metrics.sandboxCallEnded) : runtime,
    ledger,
    results: createResultStore(dataDir),
    gateway: options.gateway,
    starts: new StartQueue(options.startConcurrency),
    log: process.env.SWARM_TEST_LOG ? (message) => console.error(`[swarmd] ${message}`) : undefined,
    onHarnessReconnect: metrics?.harnessReconnected,
  });
  metrics?.watch({
    agents: () => service.countAgents(),
    storageFull: () => isStorageFull(ledger.storage()),
    nodes: (signal) => runtime.nodes(signal),
  });
  const app = buildServer({
    swarm: service,
    events: ledger,
    storage: ledger,
    config: {
      bodyLimitBytes: options.bodyLimitBytes ?? 1024 * 1024,
      token: options.token,
      slowConsumerLimit: options.slowConsumerLimit,
      metrics,
      logger: false,
    },
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    dataDir,
    service,
    ledger,
    runtime,
    metrics,
    call: (method, path, body, headers) => call(url, method, path, body, headers),
    async stop() {
      await app.close();
      await service.close();
      await runtime.dispose?.();
      for (const sandbox of await runtime.list(AbortSignal.timeout(30_000)))
        await runtime.close(sandbox.sandboxId, AbortSignal.timeout(30_000));
      await ledger.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type RuntimeKind = "process" | "docker" | "simulated" | "cluster";

/**
 * The runtime of the in-process test daemon (`startDaemon` without a `runtime` of its own):
 * `SWARM_E2E_RUNTIME`, `simulated` by default. Control-plane suites run on the simulated runtime;
 * test/e2e/process.test.ts and test/e2e/docker.test.ts run the route suite again on the real ones
 * (`SWARM_E2E_RUNTIME=process node --import tsx --test test/e2e/controls.test.ts` does it by hand).
 */
export function e2eRuntime(): RuntimeKind {
  const kind = process.env.SWARM_E2E_RUNTIME || "simulated";
  if (kind !== "process" && kind !== "docker" && kind !== "simulated" && kind !== "cluster")
    throw new Error(`SWARM_E2E_RUNTIME: ${kind} is not process, docker, cluster or simulated`);
  return kind;
}

/**
 * The runtime of suites about the sandboxes themselves (isolation, limits, their folders): the one
 * `SWARM_E2E_RUNTIME` names when it is a real one, else process.
 */
export function sandboxRuntime(): Exclude<RuntimeKind, "simulated"> {
  const kind = e2eRuntime();
  return kind === "simulated" ? "process" : kind;
}

/** A runtime of `kind` on `dataDir`, as the daemon makes it (quiet). */
export function createRuntime(kind: RuntimeKind, dataDir: string): SandboxRuntime {
  switch (kind) {
    case "docker":
      return createDockerRuntime({ dataDir });
    case "simulated":
      return createMemoryRuntime();
    case "cluster":
      return createTestClusterRuntime(dataDir);
    case "process":
      return createProcessRuntime({ dataDir, logger: { info: () => undefined, warn: () => undefined } });
  }
}

/**
 * A parsed JSON body as the end-to-end tests read it: they walk into fields and assert each one, so
 * typing every response would only restate the spec. The one `any` of the project, kept to tests.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Json = any;

export interface Reply<T> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

export function call<T = Json>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return new Promise<Reply<T>>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      `${base}${path}`,
      { method, headers: { ...(payload ? { "content-type": "application/json" } : {}), ...headers } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: (text ? JSON.parse(text) : undefined) as T,
          }),
        );
      },
    );
    req.on("error", reject);
    if (payload) req.write(payload);
    req.end();
  });
}

/** Poll the agent view until it reaches `state`; `headers` go with each poll (a bearer token). */
export async function waitForState(
  d: Daemon,
  agentId: string,
  state: string,
  timeoutMs = 90_000,
  headers?: Record<string, string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await d.call("GET", `/agents/${agentId}`, undefined, headers);
    if (view.body.state === state) return;
    if (Date.now() > deadline) throw new Error(`agent ${agentId} is ${view.body.state}, not ${state}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
