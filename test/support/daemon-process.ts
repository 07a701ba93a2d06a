import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { sandboxTag } from "../../src/sandbox/process/sandbox-tag.ts";
import { call, type Json, type Reply } from "./daemon.ts";

/** The daemon as its own process (`src/main.ts`), so a test can SIGKILL it and start it again. */
export interface DaemonProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  call<T = Json>(method: string, path: string, body?: unknown): Promise<Reply<T>>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function spawnDaemon(dataDir: string, env: Record<string, string> = {}): Promise<DaemonProcess> {
  // A restart on the same address passes the old one as SWARM_PORT.
  const port = env.SWARM_PORT ? Number(env.SWARM_PORT) : await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(SWARMD_ROOT, "src/main.ts")], {
    cwd: SWARMD_ROOT,
    env: {
      ...process.env,
      SWARM_DATA_DIR: dataDir,
      SWARM_HOST: "127.0.0.1",
      SWARM_PORT: String(port),
      SWARM_LOG_LEVEL: "info",
      // No pool unless a test asks for one (test/e2e/pool.test.ts): suites that SIGKILL the daemon and
      // remove its data folder would leave its pooled sandboxes running, with no daemon to close them.
      SWARM_POOL_SIZE: "0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode}: ${output}`);
    const ok = await call(url, "GET", "/health").then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      // Not left behind: a live child would keep the test process from ending.
      child.kill("SIGKILL");
      throw new Error(`daemon did not answer /health: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    output: () => output,
    call: (method, path, body) => call(url, method, path, body),
    async kill(signal = "SIGKILL") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill(signal);
      await exited;
    },
  };
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Pids of live processes tagged as belonging to one of these sandboxes (SWARMD_SANDBOX in their environment). */
export function sandboxProcesses(sandboxIds: Iterable<string>): number[] {
  const tags = [...sandboxIds].map(sandboxTag);
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (environ.some((v) => tags.includes(v))) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Poll the agent view until it reaches `state`; fails at once when the agent ended instead. */
export async function waitState(d: DaemonProcess, agentId: string, state: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await d.call("GET", `/agents/${agentId}`);
    if (view.body.state === state) return;
    if (Date.now() > deadline || view.body.outcome)
      throw new Error(`agent ${agentId} is ${view.body.state} (${view.body.outcome}), not ${state}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
