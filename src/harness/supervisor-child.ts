import { spawn } from "node:child_process";
import { CHANNELS } from "./mux/channels.ts";
import { createMux, type MuxChannel } from "./mux/mux.ts";

/** How long a harness has to end after SIGTERM before it is killed. */
export const STOP_GRACE_MS = 5_000;

/** What the supervisor keeps of a harness's output, for a start that failed. */
const OUTPUT_TAIL_CHARS = 4_096;

/** One harness the supervisor started, in stdio mode: its channels carried over the child's stdin and stdout. */
export interface HarnessChild {
  /** The harness serves; rejects with its output's tail when it ended first. */
  ready: Promise<void>;
  /** Resolves once the process exited. */
  exited: Promise<void>;
  readonly running: boolean;
  /** A new connection to the harness's endpoint; undefined when it is not serving. */
  openHarness(): MuxChannel | undefined;
  /** SIGTERM, SIGKILL after `STOP_GRACE_MS`; resolves once it exited. */
  stop(): Promise<void>;
}

export interface HarnessChildOptions {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** The harness opened a connection for a model call. */
  onModel(channel: MuxChannel): void;
  log(message: string): void;
}

export function spawnHarnessChild(options: HarnessChildOptions): HarnessChild {
  const [command, ...args] = options.argv;
  const child = spawn(command!, args, { env: options.env, cwd: options.cwd, stdio: ["pipe", "pipe", "pipe"] });
  let tail = "";
  let serving = false;
  let exitedFlag = false;
  let markReady!: () => void;
  let failReady!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  ready.catch(() => undefined);

  child.stderr.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    tail = (tail + text).slice(-OUTPUT_TAIL_CHARS);
    process.stderr.write(text);
  });
  const mux = createMux({
    input: child.stdout,
    output: child.stdin,
    firstId: 1,
    live: true,
    log: (message) => options.log(`harness stream: ${message}`),
    onOpen(name, channel) {
      if (name === CHANNELS.model) options.onModel(channel);
      else channel.destroy();
    },
    onControl(frame) {
      if (frame.t === "ready") {
        serving = true;
        markReady();
      }
    },
    onEnd: () => undefined,
  });
  child.stdin.on("error", () => undefined);
  const exited = new Promise<void>((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      exitedFlag = true;
      serving = false;
      mux.destroy(new Error("the harness exited"));
      failReady(new Error(`the harness exited (${signal ?? `code ${code}`}) before it served: ${tail.trim()}`));
      resolve();
    };
    child.once("exit", onExit);
    child.once("error", (err) => {
      tail += err.message;
      if (child.pid === undefined) onExit(null, null);
    });
  });

  return {
    ready,
    exited,
    get running() {
      return !exitedFlag;
    },
    openHarness: () => (serving ? mux.open(CHANNELS.harness) : undefined),
    async stop() {
      if (exitedFlag) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
