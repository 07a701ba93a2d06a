import type { Config } from "../config.ts";
import { isSwarmError, SwarmError } from "../errors.ts";
import { createClusterRuntime } from "./cluster/cluster-runtime.ts";
import { createDockerRuntime } from "./docker/docker-runtime.ts";
import { createMemoryRuntime } from "./memory/memory-runtime.ts";
import { createProcessRuntime } from "./process/process-runtime.ts";
import type { SandboxRuntime } from "./runtime.ts";
import { clusterContainerCommand, clusterImageTag } from "./stream/cluster-image.ts";

/**
 * The runtime SWARM_RUNTIME names, ready to use (docker: the engine answered). The process runtime
 * fails closed: without working bubblewrap it throws `RUNTIME_UNAVAILABLE` saying how to go on,
 * unless the operator set SWARM_ISOLATION=none.
 */
export async function createRuntime(
  config: Config,
  logger: { info(message: string): void; warn(message: string): void },
): Promise<SandboxRuntime> {
  const log = (message: string) => logger.warn(message);
  if (config.runtime === "simulated") return createMemoryRuntime();
  if (config.runtime === "cluster") {
    const runtime = createClusterRuntime({
      dataDir: config.dataDir,
      settings: config.cluster!,
      image: clusterImageTag(),
      command: clusterContainerCommand(),
      log: (message) => logger.info(message),
    });
    // Fails with RUNTIME_UNAVAILABLE when the manager does not answer or is no swarm manager.
    await runtime.list(AbortSignal.timeout(10_000)).catch((err: unknown) => {
      throw new SwarmError(
        "RUNTIME_UNAVAILABLE",
        `The swarm manager at ${config.cluster!.manager} did not answer as a manager: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    });
    return runtime;
  }
  if (config.runtime === "process") {
    try {
      return createProcessRuntime({
        dataDir: config.dataDir,
        isolation: config.isolation,
        bwrap: config.bwrap,
        pool: { size: config.poolSize, limits: config.limits },
        logger: { warn: (message) => logger.warn(message), info: (message) => logger.info(message) },
      });
    } catch (err) {
      if (!isSwarmError(err, "RUNTIME_UNAVAILABLE") || config.isolation !== "bubblewrap") throw err;
      const hint =
        "refusing to run sandboxes unisolated: install bubblewrap (make run does, as root) or set SWARM_ISOLATION=none to accept unisolated sandboxes";
      throw new SwarmError("RUNTIME_UNAVAILABLE", `${err.message}; ${hint}`, { cause: err });
    }
  }
  const runtime = createDockerRuntime({
    dataDir: config.dataDir,
    image: config.docker.image,
    log,
  });
  // Fails with RUNTIME_UNAVAILABLE naming DOCKER_HOST or the default socket when no engine answers.
  await runtime.list(AbortSignal.timeout(10_000));
  return runtime;
}
