import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import type { CallUsage } from "../../src/gateway/model-caller.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { attachHarnessClient, type HarnessClient } from "../../src/harness/client.ts";
import { harnessArgv } from "../../src/harness/launch.ts";
import { CONTROL_FILES, type HarnessEventMessage, type HostCallMessage } from "../../src/harness/protocol.ts";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";
import { scriptCaller } from "./script-gateway.ts";
import { createWaitList } from "./wait-list.ts";

/** A harness started as a real child process on a real socket in a temporary folder. */
export interface HarnessFixture {
  controlDir: string;
  workDir: string;
  child: ChildProcess;
  /** Every model call the harness made through its gateway socket. */
  usage: CallUsage[];
  /** Connect a new client that replays events after `after`. */
  connect(after?: number): Promise<Connection>;
  stop(): Promise<void>;
}

export interface Connection {
  client: HarnessClient;
  events: HarnessEventMessage[];
  hostCalls: HostCallMessage[];
  /** Resolve with the first event (already received or future) matching `match`. */
  waitFor(match: (e: HarnessEventMessage) => boolean, timeoutMs?: number): Promise<HarnessEventMessage>;
  waitForHostCall(timeoutMs?: number): Promise<HostCallMessage>;
  close(): void;
}

export async function startHarness(spec: Record<string, unknown>): Promise<HarnessFixture> {
  const root = mkdtempSync(join(tmpdir(), "swarmd-harness-"));
  const controlDir = join(root, "control");
  const workDir = join(root, "work");
  mkdirSync(controlDir);
  mkdirSync(workDir);
  writeFileSync(join(controlDir, CONTROL_FILES.spec), JSON.stringify(spec));
  // The daemon's side of the model: its gateway socket in the control folder, answering the script.
  const usage: CallUsage[] = [];
  const gateway = new ModelGateway(loadModelCatalog());
  await gateway.open(controlDir, scriptCaller((spec.script ?? []) as ScriptStep[], usage));
  const [command, ...args] = harnessArgv({ controlDir, workDir });
  const child = spawn(command!, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  await until(
    () => output.includes("harness ready") || child.exitCode !== null,
    20_000,
    () => `harness did not start: ${output}`,
  );
  if (child.exitCode !== null) throw new Error(`harness exited: ${output}`);
  const socketPath = join(controlDir, CONTROL_FILES.socket);
  const connections: Connection[] = [];

  return {
    controlDir,
    workDir,
    child,
    usage,
    async connect(after = 0) {
      const socket = connect(socketPath);
      await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
      const events: HarnessEventMessage[] = [];
      const hostCalls: HostCallMessage[] = [];
      const waits = createWaitList();
      const wake = () => waits.wake();
      const client = attachHarnessClient(socket, after, {
        onEvent: (e) => {
          events.push(e);
          wake();
        },
        onHostCall: (c) => {
          hostCalls.push(c);
          wake();
        },
      });
      const waitUntil = <T>(find: () => T | undefined, timeoutMs: number, what: string) =>
        waits.until(
          find,
          timeoutMs,
          () => `timed out waiting for ${what}; saw: ${events.map((e) => e.event).join(",")}`,
        );
      const connection: Connection = {
        client,
        events,
        hostCalls,
        waitFor: (match, timeoutMs = 15_000) => waitUntil(() => events.find(match), timeoutMs, "event"),
        waitForHostCall: (timeoutMs = 15_000) => waitUntil(() => hostCalls[0], timeoutMs, "host call"),
        close: () => client.close(),
      };
      connections.push(connection);
      return connection;
    },
    async stop() {
      for (const c of connections) c.close();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGKILL");
        await exited;
      }
      await gateway.closeAll();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Poll `condition` until true or the deadline passes. */
export async function until(condition: () => boolean, timeoutMs: number, message: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(message());
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const settledText = (e: HarnessEventMessage) => (e.data as { text: string | null }).text;
