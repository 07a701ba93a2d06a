/**
 * swarmd: the daemon. Listens on SWARM_HOST:SWARM_PORT (default 127.0.0.1:4600) with the embedded
 * `process` runtime and a LevelDB ledger under SWARM_DATA_DIR unless configured otherwise.
 * SIGTERM/SIGINT close the server and the ledger cleanly and leave sandboxes running, so the
 * next start reconnects to them (the simulated runtime's live in this process and end with it).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { StartQueue } from "../actors/start-queue.ts";
import { createSwarmService } from "../actors/swarm-service.ts";
import { loadConfig } from "./config.ts";
import { errorMessage } from "./errors.ts";
import { ModelGateway } from "./gateway/gateway.ts";
import { loadModelCatalog } from "./gateway/models.ts";
import { Pacing } from "./gateway/pacing.ts";
import { ensureHarnessBundle } from "./harness/launch.ts";
import { buildServer } from "./http/build-server.ts";
import { type CommittedBatch, isStorageFull } from "./ledger/ledger.ts";
import { openLedger } from "./ledger/level-ledger.ts";
import { createLogger } from "./log/logger.ts";
import { DaemonMetrics } from "./metrics/daemon-metrics.ts";
import { observeRuntime } from "./metrics/observed-runtime.ts";
import { createResultStore } from "./results/result-store.ts";
import { createRuntime } from "./sandbox/create-runtime.ts";
import { RunTracing } from "./tracing/run-tracing.ts";
import { logTraceFields } from "./tracing/trace-ids.ts";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, token: config.token });
  mkdirSync(config.dataDir, { recursive: true });
  const metrics = new DaemonMetrics();
  const results = createResultStore(config.dataDir);
  // Traces are folded from what the ledger commits, like the metrics' counters (docs/tracing.md).
  const tracing = config.tracing ? new RunTracing(config.dataDir, logger) : undefined;
  const ledger = await openLedger(join(config.dataDir, "ledger"), {
    onCommit: observers(metrics.ledgerCommitted, tracing?.committed),
    dataDir: config.dataDir,
  });
  await tracing?.restore(ledger);
  const runtime = observeRuntime(
    await createRuntime(config, { info: (message) => logger.info(message), warn: (message) => logger.warn(message) }),
    metrics.sandboxCallEnded,
  );
  // Build the harness (bundles and code caches) now if a source changed, not in a first start that
  // would hold up the daemon; simulated sandboxes run the harness's modules in this process.
  if (runtime.kind !== "simulated") ensureHarnessBundle();
  const inspect = config.inspect ? await startInspector(config.inspectPort) : undefined;
  // Keys stay here, in the daemon: read from its environment or the models file when a call is made.
  const gateway = new ModelGateway(loadModelCatalog(config.modelsFile), new Pacing(config.pacing));
  const service = createSwarmService({
    inspect,
    config: {
      dataDir: config.dataDir,
      turnMaxMs: config.turnMaxMs,
      memberTimeoutMs: config.memberTimeoutMs,
      hibernateAfterMs: config.hibernateAfterMs,
      limits: config.limits,
    },
    runtime,
    ledger,
    results,
    gateway,
    starts: new StartQueue(config.startConcurrency),
    // What the service reports is its lifecycle (restore, lost agents, ends with an error): info.
    // With traces on, a line about a run carries its trace's id and its agent's span id.
    log: (message, about) => (tracing && about ? logger.info(logTraceFields(about), message) : logger.info(message)),
    ...(tracing && config.tracing?.captureContent
      ? { onPrompt: (agentId, text) => tracing.prompted(agentId, text) }
      : {}),
    onHarnessReconnect: metrics.harnessReconnected,
  });
  metrics.watch({
    agents: () => service.countAgents(),
    storageFull: () => isStorageFull(ledger.storage()),
    nodes: (signal) => runtime.nodes(signal),
  });
  const app = buildServer({
    swarm: service,
    events: ledger,
    storage: ledger,
    config: {
      bodyLimitBytes: config.bodyLimitBytes,
      token: config.token,
      allowedHosts: [config.host, ...config.allowedHosts],
      listenHost: config.host,
      mcp: config.mcp,
      metrics,
      loggerInstance: logger,
    },
  });
  if (inspect) app.log.info(`SWARM_INSPECT=1: open http://127.0.0.1:${config.inspectPort} to watch the machines`);
  // What start-up recovery does (reconnects, lost agents, orphans closed) is worth an operator's eye.
  const restored = await service.restore();
  await app.listen({ host: config.host, port: config.port });
  app.log.info(
    `swarmd listening on http://${config.host}:${config.port} (runtime ${runtime.kind}, data ${config.dataDir}, ${restored} runs restored)`,
  );
  if (runtime.kind === "simulated") {
    app.log.warn(
      "SWARM_RUNTIME=simulated: sandboxes live in this process's memory, unisolated, and end with it; for test suites and simulations, not for running agents on real work",
    );
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info(
      `${signal}: closing the server and the ledger; ${runtime.kind === "simulated" ? "simulated sandboxes end with the daemon" : "sandboxes keep running"}`,
    );
    await app.close();
    await service.close();
    // Sandboxes started ahead that no agent took end with the daemon (a daemon killed leaves them to the next, which closes them).
    await runtime.dispose?.();
    await ledger.close();
    await tracing?.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** Several observers of the ledger's commits, each kept from failing the others. */
function observers(...each: (((batch: CommittedBatch) => void) | undefined)[]): (batch: CommittedBatch) => void {
  const present = each.filter((fn) => fn !== undefined);
  return (batch) => {
    for (const fn of present) {
      try {
        fn(batch);
      } catch {
        // An observer must not fail the appends it watches, nor the observers after it.
      }
    }
  };
}

/** SWARM_INSPECT=1: relay every actor's transitions to the Stately inspector UI. */
async function startInspector(port: number) {
  const { createWebSocketInspector } = await import("@statelyai/inspect");
  const { createInspectorServer } = await import("@statelyai/inspect/server");
  createInspectorServer({ port, autoOpen: false });
  return createWebSocketInspector({ url: `ws://127.0.0.1:${port}` }).inspect;
}

main().catch((err: unknown) => {
  console.error(`swarmd: ${errorMessage(err)}`);
  process.exit(1);
});
