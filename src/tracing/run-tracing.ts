import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { CommittedBatch, Ledger } from "../ledger/ledger.ts";

/** Events no span is made of (pi's inner turns and its run's end): never sent to the tracer. */
const SKIPPED: ReadonlySet<string> = new Set(["turn_start", "turn_end", "agent_end"]);
/** Bytes written to the tracer but not yet read beyond which events are dropped (a tracer that cannot keep up). */
export const MAX_TRACE_BACKLOG_BYTES = 64 * 1024 * 1024;
/** How long a clean shutdown waits for the tracer's last export. */
const CLOSE_TIMEOUT_MS = 10_000;
const TRACER = fileURLToPath(new URL("./tracer-process.ts", import.meta.url));
/** tsx's loader, by its full address: the daemon may run under `--import tsx` or tsx's API (bin/swarmd.js). */
const TSX = import.meta.resolve("tsx");
/** coreutils' nice: the tracer's every thread (its garbage collector's too) at the lowest priority. */
const NICE = ["/usr/bin/nice", "/bin/nice"].find((path) => existsSync(path));

/**
 * The daemon's traces (docs/tracing.md), from the daemon's side: every committed ledger batch is
 * written to the tracer (`tracer-process.ts`, a process of its own at the lowest CPU priority),
 * which folds it into spans and exports them. What is done here is a filter on each event's type
 * and, once per event-loop turn, one write of the JSON text the ledger already made; spans are
 * built, serialised and sent elsewhere. Tracing can never fail or stall the daemon: a tracer that
 * dies stops tracing with one warning, and past `MAX_TRACE_BACKLOG_BYTES` unread, events are
 * dropped (with a warning) rather than queued.
 */
export class RunTracing {
  readonly #child: ChildProcess;
  readonly #log: { warn(message: string): void };
  readonly #ready: Promise<void>;
  readonly #exited: Promise<void>;
  #pending: string[] = [];
  #scheduled = false;
  #dropped = 0;
  #dead = false;
  #closing = false;

  /** `env`: the daemon's environment (the tracer reads the same OTEL_* variables). */
  constructor(dataDir: string, log: { warn(message: string): void }, env: NodeJS.ProcessEnv = process.env) {
    this.#log = log;
    const node = [process.execPath, "--import", TSX, TRACER];
    this.#child = spawn(NICE ?? node[0]!, NICE ? ["-n", "19", ...node] : node.slice(1), {
      env: { ...env, SWARM_DATA_DIR: dataDir },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const child = this.#child;
    // The daemon's event loop is never held open by its tracer.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr])
      (stream as unknown as { unref?: () => void })?.unref?.();
    let ready = () => {};
    this.#ready = new Promise((resolve) => (ready = resolve));
    child.stdout?.setEncoding("utf8").on("data", (text: string) => {
      if (text.includes("ready")) ready();
    });
    let partial = "";
    child.stderr?.setEncoding("utf8").on("data", (text: string) => {
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (line.trim() !== "") this.#log.warn(`traces: ${line.slice(0, 2000)}`);
    });
    // A write to a tracer that died (EPIPE) is that death, reported once by `exit`.
    child.stdin?.on("error", () => undefined);
    this.#exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        ready();
        resolve();
        if (!this.#closing)
          this.#die(`traces: the tracer exited (${signal ?? code}); traces are off until the next start`);
      });
      child.once("error", (err) => {
        ready();
        resolve();
        this.#die(`traces: the tracer could not start: ${err.message}; traces are off`);
      });
    });
  }

  /** `LedgerOptions.onCommit`: synchronous and cheap; never throws into the ledger. */
  readonly committed = (batch: CommittedBatch): void => {
    if (this.#dead || this.#closing) return;
    const { events, json } = batch;
    for (let i = 0; i < events.length; i++) {
      if (!SKIPPED.has(events[i]!.type)) this.#pending.push(`E${json[i]}\n`);
    }
    if (this.#pending.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
  };

  /** Resolves once the tracer has loaded (what is written before waits in the pipe, in order). */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** The tracer's process id (undefined when it could not start). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Events dropped because the tracer was too far behind. */
  get dropped(): number {
    return this.#dropped;
  }

  /** A prompt the operator sent (its text is not in the ledger): the input of the agent's turn. */
  prompted(agentId: string, text: string): void {
    this.#flush();
    this.#write(`P${JSON.stringify({ agentId, text })}\n`, 1);
  }

  /** Start-up, before anything is written: every run's events so far, folded without export. */
  async restore(ledger: Pick<Ledger, "runIds" | "iterate">): Promise<void> {
    for (const runId of ledger.runIds()) {
      let chunk: string[] = [];
      for await (const event of ledger.iterate(runId, 0)) {
        if (SKIPPED.has(event.type)) continue;
        chunk.push(`R${JSON.stringify(event)}\n`);
        if (chunk.length < 1000) continue;
        this.#write(chunk.join(""), chunk.length);
        chunk = [];
      }
      if (chunk.length > 0) this.#write(chunk.join(""), chunk.length);
    }
  }

  /**
   * Hand over what is pending and close the pipe: the tracer exports what has ended and exits
   * (waited for up to 10 s). Spans still open are exported when they end after the next start.
   */
  async close(): Promise<void> {
    if (this.#closing) return this.#exited;
    this.#flush();
    this.#closing = true;
    this.#child.stdin?.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), CLOSE_TIMEOUT_MS);
    await this.#exited;
    clearTimeout(timer);
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const lines = this.#pending;
    this.#pending = [];
    this.#write(lines.join(""), lines.length);
  }

  #write(text: string, events: number): void {
    const stdin = this.#child.stdin;
    if (this.#dead || !stdin || stdin.destroyed) return;
    if (stdin.writableLength > MAX_TRACE_BACKLOG_BYTES) {
      if (this.#dropped === 0 || Math.floor((this.#dropped + events) / 10_000) > Math.floor(this.#dropped / 10_000)) {
        this.#log.warn(
          `traces: the tracer is ${MAX_TRACE_BACKLOG_BYTES} bytes behind; events are dropped, and the spans they would start or end are missing (${this.#dropped + events} so far)`,
        );
      }
      this.#dropped += events;
      return;
    }
    stdin.write(text);
  }

  #die(message: string): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#pending = [];
    this.#log.warn(message);
  }
}
