import { BlockList, isIP } from "node:net";
import { availableParallelism } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { DEFAULT_MCP_MAX_SESSIONS, DEFAULT_MCP_SESSION_IDLE_MS } from "./api/mcp.ts";
import { SwarmError } from "./errors.ts";
import { DEFAULT_PACING, type PacingConfig } from "./gateway/pacing.ts";
import { type ClusterSettings, parseClusterNodes } from "./sandbox/cluster/cluster-settings.ts";
import { DEFAULT_SANDBOX_LIMITS, type RuntimeKind, type SandboxLimits } from "./sandbox/runtime.ts";
import { loadTraceConfig, type TraceConfig } from "./tracing/trace-config.ts";

/** An agent idle this long between turns hibernates: its harness ends, its session and files stay. */
export const DEFAULT_HIBERNATE_AFTER_MS = 60_000;

/**
 * Sandbox and harness starts under way at once by default (SWARM_START_CONCURRENCY): one per core,
 * as a start is mostly one core's work. The start line (actors/start-queue.ts) takes the number.
 */
export const DEFAULT_START_CONCURRENCY = Math.max(1, availableParallelism());

/**
 * Sandboxes the process runtime keeps made with their harness started, for agents to take
 * (SWARM_POOL_SIZE): one per core, at most 4. Each holds an idle harness (about 40 MiB); a take
 * starts the next one, and starts run one per core, so more than that would not be ready sooner.
 */
export const DEFAULT_POOL_SIZE = Math.min(4, Math.max(1, availableParallelism()));

const Env = z.object({
  SWARM_HOST: z.string().min(1).default("127.0.0.1"),
  SWARM_PORT: z.coerce.number().int().min(0).max(65535).default(4600),
  SWARM_DATA_DIR: z.string().min(1).default("./data"),
  SWARM_RUNTIME: z.enum(["process", "docker", "simulated", "cluster"]).default("process"),
  SWARM_TURN_MAX_MS: z.coerce.number().int().min(1).default(1_800_000),
  SWARM_MEMBER_TIMEOUT_MS: z.coerce.number().int().min(1).default(60_000),
  SWARM_HIBERNATE_AFTER_MS: z.coerce.number().int().min(0).default(DEFAULT_HIBERNATE_AFTER_MS),
  SWARM_START_CONCURRENCY: z.coerce.number().int().min(1).default(DEFAULT_START_CONCURRENCY),
  SWARM_POOL_SIZE: z.coerce.number().int().min(0).max(256).default(DEFAULT_POOL_SIZE),
  SWARM_TOKEN: z.string().min(1).optional(),
  SWARM_BODY_LIMIT: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  SWARM_MCP_MAX_SESSIONS: z.coerce.number().int().min(1).default(DEFAULT_MCP_MAX_SESSIONS),
  SWARM_MCP_SESSION_IDLE_MS: z.coerce.number().int().min(1000).default(DEFAULT_MCP_SESSION_IDLE_MS),
  SWARM_INSPECT: z.enum(["0", "1"]).default("0"),
  SWARM_INSPECT_PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  SWARM_DOCKER_IMAGE: z.string().min(1).optional(),
  SWARM_CLUSTER_MANAGER: z.string().min(1).optional(),
  SWARM_CLUSTER_NODES: z.string().min(1).optional(),
  SWARM_CLUSTER_TLS_DIR: z.string().refine(isAbsolute, { message: "must be an absolute path" }).optional(),
  SWARM_CLUSTER_LOCAL_WAIT_MS: z.coerce.number().int().min(0).default(2000),
  SWARM_CLUSTER_NETWORK: z.string().min(1).optional(),
  SWARM_CLUSTER_RESERVE: z.coerce.number().min(0.001).max(1).default(0.05),
  SWARM_LIMIT_PIDS: z.coerce.number().int().min(8).default(DEFAULT_SANDBOX_LIMITS.pids),
  SWARM_LIMIT_MEMORY_MIB: z.coerce.number().int().min(32).default(DEFAULT_SANDBOX_LIMITS.memoryMiB),
  SWARM_LIMIT_CPUS: z.coerce.number().min(0.01).default(DEFAULT_SANDBOX_LIMITS.cpus),
  SWARM_LIMIT_DISK_MIB: z.coerce.number().int().min(1).default(DEFAULT_SANDBOX_LIMITS.diskMiB),
  SWARM_LIMIT_TMP_MIB: z.coerce.number().int().min(1).default(DEFAULT_SANDBOX_LIMITS.tmpMiB),
  SWARM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Unset: readable lines on a terminal, JSON lines otherwise. */
  SWARM_LOG_FORMAT: z.enum(["pretty", "json"]).optional(),
  SWARM_ALLOWED_HOSTS: z
    .string()
    .transform((list) =>
      list
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name !== ""),
    )
    .refine((names) => names.every(isHostName), {
      message: "must be host names or IP addresses separated by commas, with no scheme or port",
    })
    .default([]),
  SWARM_ISOLATION: z.enum(["bubblewrap", "none"]).default("bubblewrap"),
  SWARM_BWRAP: z.string().refine(isAbsolute, { message: "must be an absolute path" }).optional(),
  SWARM_MODELS: z.string().min(1).optional(),
  SWARM_MODEL_CONCURRENCY: z
    .string()
    .regex(/^\s*\d+\s*(,\s*[A-Za-z0-9._-]+\s*=\s*\d+\s*)*$/, {
      message: 'must be a number of calls, optionally followed by per-provider numbers ("16,anthropic=4,openai=8")',
    })
    .default(String(DEFAULT_PACING.concurrency)),
  SWARM_MODEL_MAX_BACKOFF_MS: z.coerce.number().int().min(0).default(DEFAULT_PACING.maxBackoffMs),
});

/** The daemon's settings, all from the environment (docs/design.md "Names"). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** `simulated`: sandboxes and scripted harnesses in the daemon's memory, for test suites (docs/simulated.md). */
  runtime: RuntimeKind;
  turnMaxMs: number;
  /** How long a control waits for one member's answer before recording it `failed` (SWARM_MEMBER_TIMEOUT_MS). */
  memberTimeoutMs: number;
  /** Idle time between turns after which an agent's harness hibernates (SWARM_HIBERNATE_AFTER_MS); 0: never. */
  hibernateAfterMs: number;
  /** Sandbox and harness starts under way at once; the rest wait their turn (SWARM_START_CONCURRENCY). */
  startConcurrency: number;
  /** Sandboxes the process runtime keeps started ahead for agents to take (SWARM_POOL_SIZE); 0: none. */
  poolSize: number;
  token?: string;
  bodyLimitBytes: number;
  /** The tool bridge's sessions at `/mcp` (SWARM_MCP_MAX_SESSIONS, SWARM_MCP_SESSION_IDLE_MS). */
  mcp: { maxSessions: number; idleMs: number };
  inspect: boolean;
  inspectPort: number;
  docker: { image?: string };
  /** The cluster runtime's settings (SWARM_CLUSTER_*), when SWARM_RUNTIME=cluster. */
  cluster?: ClusterSettings;
  /** The most any sandbox gets (SWARM_LIMIT_*): every run's root is within it, every child within its parent. */
  limits: SandboxLimits;
  logLevel: z.infer<typeof Env>["SWARM_LOG_LEVEL"];
  logFormat?: z.infer<typeof Env>["SWARM_LOG_FORMAT"];
  /** Host header names served besides loopback and `host` (SWARM_ALLOWED_HOSTS). */
  allowedHosts: string[];
  /** Isolation of `process` sandboxes: `bubblewrap`, or `none` only when the operator says so. */
  isolation: "bubblewrap" | "none";
  /** The one bwrap binary to use (SWARM_BWRAP); unset: the first in /usr/bin, /usr/local/bin, PATH. */
  bwrap?: string;
  /** pi's models.json of custom providers and overrides (SWARM_MODELS), read once at start. */
  modelsFile?: string;
  /** How the model gateway paces calls per provider (SWARM_MODEL_CONCURRENCY, SWARM_MODEL_MAX_BACKOFF_MS). */
  pacing: PacingConfig;
  /** OpenTelemetry traces (the standard OTEL_* variables, docs/tracing.md); null when off. */
  tracing: TraceConfig | null;
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

  // Anyone who reaches a non-loopback address could run code through the agents: not without a token.
  if (e.SWARM_TOKEN === undefined && !isLoopback(e.SWARM_HOST)) {
    throw new SwarmError(
      "CONFIG_INVALID",
      `invalid configuration: SWARM_HOST=${e.SWARM_HOST} is not a loopback address and SWARM_TOKEN is not set; set SWARM_TOKEN, or listen on 127.0.0.1`,
    );
  }
  return {
    host: e.SWARM_HOST,
    port: e.SWARM_PORT,
    dataDir: resolve(e.SWARM_DATA_DIR),
    runtime: e.SWARM_RUNTIME,
    turnMaxMs: e.SWARM_TURN_MAX_MS,
    memberTimeoutMs: e.SWARM_MEMBER_TIMEOUT_MS,
    hibernateAfterMs: e.SWARM_HIBERNATE_AFTER_MS,
    startConcurrency: e.SWARM_START_CONCURRENCY,
    poolSize: e.SWARM_POOL_SIZE,
    token: e.SWARM_TOKEN,
    bodyLimitBytes: e.SWARM_BODY_LIMIT,
    mcp: { maxSessions: e.SWARM_MCP_MAX_SESSIONS, idleMs: e.SWARM_MCP_SESSION_IDLE_MS },
    inspect: e.SWARM_INSPECT === "1",
    inspectPort: e.SWARM_INSPECT_PORT,
    docker: { image: e.SWARM_DOCKER_IMAGE },
    ...(e.SWARM_RUNTIME === "cluster" ? { cluster: clusterSettings(e) } : {}),
    limits: {
      pids: e.SWARM_LIMIT_PIDS,
      memoryMiB: e.SWARM_LIMIT_MEMORY_MIB,
      cpus: e.SWARM_LIMIT_CPUS,
      diskMiB: e.SWARM_LIMIT_DISK_MIB,
      tmpMiB: e.SWARM_LIMIT_TMP_MIB,
    },
    logLevel: e.SWARM_LOG_LEVEL,
    logFormat: e.SWARM_LOG_FORMAT,
    allowedHosts: e.SWARM_ALLOWED_HOSTS,
    isolation: e.SWARM_ISOLATION,
    bwrap: e.SWARM_BWRAP,
    modelsFile: e.SWARM_MODELS === undefined ? undefined : resolve(e.SWARM_MODELS),
    pacing: { ...parseConcurrency(e.SWARM_MODEL_CONCURRENCY), maxBackoffMs: e.SWARM_MODEL_MAX_BACKOFF_MS },
    tracing: loadTraceConfig(env),
  };
}

/** SWARM_CLUSTER_*: the manager is required; node addresses are checked when the runtime opens them. */
function clusterSettings(e: z.infer<typeof Env>): ClusterSettings {
  if (e.SWARM_CLUSTER_MANAGER === undefined)
    throw new SwarmError(
      "CONFIG_INVALID",
      "invalid configuration: SWARM_RUNTIME=cluster needs SWARM_CLUSTER_MANAGER (unix://, tcp:// with SWARM_CLUSTER_TLS_DIR, or ssh://)",
    );
  return {
    manager: e.SWARM_CLUSTER_MANAGER,
    nodes: parseClusterNodes(e.SWARM_CLUSTER_NODES ?? ""),
    tlsDir: e.SWARM_CLUSTER_TLS_DIR,
    localWaitMs: e.SWARM_CLUSTER_LOCAL_WAIT_MS,
    network: e.SWARM_CLUSTER_NETWORK,
    reserve: e.SWARM_CLUSTER_RESERVE,
  };
}

/** `16,anthropic=4`: 16 calls in flight per provider, 4 to anthropic. A 0 is refused: nothing would ever be sent. */
function parseConcurrency(value: string): Pick<PacingConfig, "concurrency" | "perProvider"> {
  const [first, ...rest] = value.split(",").map((part) => part.trim());
  const perProvider = Object.fromEntries(
    rest.map((part) => part.split("=").map((s) => s.trim())).map(([name, n]) => [name!, Number(n)]),
  );
  const concurrency = Number(first);
  if (concurrency < 1 || Object.values(perProvider).some((n) => n < 1)) {
    throw new SwarmError(
      "CONFIG_INVALID",
      "invalid configuration: SWARM_MODEL_CONCURRENCY: every number of calls must be at least 1",
    );
  }
  return { concurrency, perProvider };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** `localhost`, 127.0.0.0/8 or ::1 (also bracketed, as in a URL). */
export function isLoopback(host: string): boolean {
  const address = host.replace(/^\[(.*)\]$/, "$1");
  if (address.toLowerCase() === "localhost") return true;
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** A DNS name or an IP address (IPv6 with or without brackets): what a Host header may name. */
function isHostName(name: string): boolean {
  return (
    isIP(name.replace(/^\[(.*)\]$/, "$1")) !== 0 ||
    /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/i.test(name)
  );
}
