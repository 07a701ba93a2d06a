import Docker from "dockerode";
import { type ErrorCode, errorMessage, SwarmError } from "../../errors.ts";

/** Where the Docker engine listens. Default: `DOCKER_HOST`, else the default Unix socket. */
export interface DockerEndpoint {
  socketPath?: string;
  host?: string;
  port?: number;
  protocol?: "http" | "https";
}

/** A dockerode client plus a readable name of the engine it talks to, for error messages. */
export interface Engine {
  docker: Docker;
  where: string;
}

const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ENOENT",
  "EACCES",
  "EPERM",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
]);

export function openEngine(endpoint?: DockerEndpoint): Engine {
  const where = endpoint?.socketPath
    ? `socket ${endpoint.socketPath}`
    : endpoint?.host
      ? `${endpoint.protocol ?? "http"}://${endpoint.host}:${endpoint.port ?? 2375}`
      : process.env.DOCKER_HOST
        ? `DOCKER_HOST=${process.env.DOCKER_HOST}`
        : "the default socket /var/run/docker.sock (DOCKER_HOST is not set)";
  try {
    return { docker: endpoint ? new Docker(endpoint) : new Docker(), where };
  } catch (err) {
    throw new SwarmError(
      "RUNTIME_UNAVAILABLE",
      `Docker engine settings are not usable (${where}): ${errorMessage(err)}`,
      { cause: err },
    );
  }
}

/** HTTP status of an engine answer, when the error is one. */
export function engineStatus(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

export function isUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && UNREACHABLE.has(code);
}

/**
 * The one place engine failures become `SwarmError`s: an unreachable engine is always
 * `RUNTIME_UNAVAILABLE`; a `SwarmError` or an abort passes through; the rest gets `code`.
 */
export function engineError(engine: Engine, err: unknown, code: ErrorCode, what: string): unknown {
  if (err instanceof SwarmError) return err;
  if ((err as { name?: unknown } | null)?.name === "AbortError") return err;
  if (isUnreachable(err)) {
    return new SwarmError(
      "RUNTIME_UNAVAILABLE",
      `Docker engine not reachable at ${engine.where}: ${errorMessage(err)}. Start dockerd or set DOCKER_HOST.`,
      { cause: err },
    );
  }
  return new SwarmError(code, `${what}: ${errorMessage(err).trim()}`, { cause: err });
}

/** Resolves when the engine answers a ping; throws `RUNTIME_UNAVAILABLE` naming where it looked. */
export async function pingEngine(endpoint?: DockerEndpoint): Promise<void> {
  const engine = openEngine(endpoint);
  try {
    await engine.docker.ping();
  } catch (err) {
    throw engineError(engine, err, "RUNTIME_UNAVAILABLE", `Docker engine at ${engine.where} did not answer`);
  }
}
