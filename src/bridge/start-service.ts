import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { Endpoint } from "../client/endpoint.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import { SWARMD_ROOT } from "../harness/launch.ts";
import { type Listen, startContainer } from "./start-container.ts";

export interface StartRequest {
  runtime: "process" | "docker";
  /** How long to wait for `/health` to answer. */
  waitSeconds: number;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** Where the service listens and what was started for it. */
export interface StartedService {
  url: string;
  /** `/health` already answered: nothing was started. */
  alreadyRunning: boolean;
  /** `process`: a detached `swarmd` process; `container`: the daemon in a Docker container. */
  mode?: "process" | "container";
  runtime?: "process" | "docker";
  pid?: number;
  containerId?: string;
  containerName?: string;
  image?: string;
  dataDir?: string;
  /** Where the daemon's own log goes (a file, or `docker logs <name>`). */
  log?: string;
}

/**
 * Starts swarmd where `SWARM_URL` points, unless it already answers there: for the `process`
 * runtime as a detached `node --import tsx src/main.ts` (what `make run` runs) logging to
 * `<dataDir>/swarmd.log`; for `docker`, after checking the engine, as a container (see
 * `startContainer`). Resolves once `/health` answers; throws naming the log when it does not.
 * Only a loopback `SWARM_URL` can be started here: anything else is another machine's service.
 */
export async function startService(client: SwarmClient, request: StartRequest): Promise<StartedService> {
  const { endpoint } = client;
  if (await client.health()) return { url: endpoint.url, alreadyRunning: true };
  const listen = listenFor(endpoint, request.env);
  mkdirSync(listen.dataDir, { recursive: true });
  if (request.runtime === "docker") {
    const started = await startContainer(listen, request.env, request.signal);
    await waitForHealth(client, request, started.exited);
    return {
      url: endpoint.url,
      alreadyRunning: false,
      mode: "container",
      runtime: "docker",
      dataDir: listen.dataDir,
      ...started.info,
    };
  }
  const log = join(listen.dataDir, "swarmd.log");
  const fd = openSync(log, "a");
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: listen.root,
    detached: true,
    stdio: ["ignore", fd, fd],
    env: {
      ...request.env,
      SWARM_HOST: listen.host,
      SWARM_PORT: String(listen.port),
      SWARM_RUNTIME: "process",
      SWARM_DATA_DIR: listen.dataDir,
    },
  });
  closeSync(fd);
  // The daemon outlives the bridge: it is the source of truth, and other clients may use it.
  child.unref();
  const exited = new Promise<string>((done) =>
    child.once("exit", (code, signal) => done(`exited with ${signal ?? `code ${code}`}; ${tail(log)}`)),
  );
  await waitForHealth(client, request, exited);
  return {
    url: endpoint.url,
    alreadyRunning: false,
    mode: "process",
    runtime: "process",
    pid: child.pid,
    dataDir: listen.dataDir,
    log,
  };
}

function listenFor(endpoint: Endpoint, env: NodeJS.ProcessEnv): Listen {
  const url = new URL(endpoint.url);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!isLoopback(host)) {
    throw new Error(
      `SWARM_URL is ${endpoint.url}, which is not this machine's loopback address; swarm_start_service only starts a local swarmd. Set SWARM_URL to e.g. http://127.0.0.1:4600.`,
    );
  }
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const dataDir = env.SWARM_DATA_DIR
    ? isAbsolute(env.SWARM_DATA_DIR)
      ? env.SWARM_DATA_DIR
      : resolve(SWARMD_ROOT, env.SWARM_DATA_DIR)
    : join(SWARMD_ROOT, "data");
  return { host: host === "localhost" ? "127.0.0.1" : host, port, dataDir, root: SWARMD_ROOT };
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Polls `/health` until it answers, the started daemon exits, the caller cancels, or time is up. */
async function waitForHealth(client: SwarmClient, request: StartRequest, exited: Promise<string>): Promise<void> {
  let gone: string | undefined;
  void exited.then((why) => (gone = why));
  const deadline = Date.now() + request.waitSeconds * 1000;
  for (;;) {
    if (await client.health(1_000)) return;
    if (gone !== undefined) throw new Error(`swarmd did not start: it ${gone}`);
    if (request.signal?.aborted) throw request.signal.reason;
    if (Date.now() > deadline)
      throw new Error(
        `swarmd was started but ${client.endpoint.url}/health did not answer within ${request.waitSeconds} s.`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The end of a log file, for an error message. */
function tail(file: string, lines = 15): string {
  try {
    const text = readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    return `the end of ${file}:\n${text}`;
  } catch {
    return `no log at ${file}`;
  }
}
