import { resolve } from "node:path";
import { z } from "zod";
import { SwarmError } from "./errors.ts";

const Env = z.object({
  SWARM_HOST: z.string().min(1).default("127.0.0.1"),
  SWARM_PORT: z.coerce.number().int().min(0).max(65535).default(4600),
  SWARM_DATA_DIR: z.string().min(1).default("./data"),
  SWARM_RUNTIME: z.enum(["process", "docker"]).default("process"),
  SWARM_TURN_MAX_MS: z.coerce.number().int().min(1).default(1_800_000),
  SWARM_TOKEN: z.string().min(1).optional(),
  SWARM_BODY_LIMIT: z.coerce.number().int().min(1024).default(1024 * 1024),
  SWARM_INSPECT: z.enum(["0", "1"]).default("0"),
  SWARM_INSPECT_PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  SWARM_DOCKER_IMAGE: z.string().min(1).optional(),
  SWARM_DOCKER_MEMORY_MB: z.coerce.number().int().min(16).default(1024),
  SWARM_DOCKER_PIDS: z.coerce.number().int().min(16).default(512),
  SWARM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** The daemon's settings, all from the environment (DESIGN.md "Names"). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  runtime: "process" | "docker";
  turnMaxMs: number;
  token?: string;
  bodyLimitBytes: number;
  inspect: boolean;
  inspectPort: number;
  docker: { image?: string; memoryBytes: number; pidsLimit: number };
  logLevel: z.infer<typeof Env>["SWARM_LOG_LEVEL"];
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // `SWARM_PORT=` means "not set", as in a shell; coerced, it would be port 0 (a random port).
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = Env.safeParse(set);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new SwarmError("CONFIG_INVALID", `invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    host: e.SWARM_HOST,
    port: e.SWARM_PORT,
    dataDir: resolve(e.SWARM_DATA_DIR),
    runtime: e.SWARM_RUNTIME,
    turnMaxMs: e.SWARM_TURN_MAX_MS,
    token: e.SWARM_TOKEN,
    bodyLimitBytes: e.SWARM_BODY_LIMIT,
    inspect: e.SWARM_INSPECT === "1",
    inspectPort: e.SWARM_INSPECT_PORT,
    docker: { image: e.SWARM_DOCKER_IMAGE, memoryBytes: e.SWARM_DOCKER_MEMORY_MB * 1024 * 1024, pidsLimit: e.SWARM_DOCKER_PIDS },
    logLevel: e.SWARM_LOG_LEVEL,
  };
}
