import type { Config } from "../config.ts";
import { createDockerRuntime } from "./docker/docker-runtime.ts";
import { createProcessRuntime } from "./process/process-runtime.ts";
import type { SandboxRuntime } from "./runtime.ts";

/** The runtime SWARM_RUNTIME names, ready to use (docker: the engine answered). */
export async function createRuntime(config: Config, log: (message: string) => void): Promise<SandboxRuntime> {
  if (config.runtime === "process") {
    return createProcessRuntime({ dataDir: config.dataDir, logger: { warn: log, info: log } });
  }
  const runtime = createDockerRuntime({
    dataDir: config.dataDir,
    image: config.docker.image,
    memoryBytes: config.docker.memoryBytes,
    pidsLimit: config.docker.pidsLimit,
  });
  // Fails with RUNTIME_UNAVAILABLE naming DOCKER_HOST or the default socket when no engine answers.
  await runtime.list(AbortSignal.timeout(10_000));
  return runtime;
}
