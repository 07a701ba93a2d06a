import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { errorMessage, SwarmError } from "../../errors.ts";
import { demuxAttach } from "../stream/attach-demux.ts";
import { openSandboxStream, type SandboxStream } from "../stream/sandbox-stream.ts";

/** How much of a sandbox's standard error one attachment logs; the rest is counted and dropped. */
const STDERR_LOG_BYTES = 16 * 1024;
const REATTACH_FIRST_MS = 250;
const REATTACH_MAX_MS = 5_000;

export interface LinkDeps {
  /** The container now running the sandbox, on its node's engine (re-read at every attach). */
  locate(sandboxId: string): Promise<{ docker: Docker; containerId: string }>;
  /** A model call's connection from the harness: served by the sandbox's gateway. */
  model(sandboxId: string, channel: Duplex): void;
  log(message: string): void;
}

/**
 * The one stream per sandbox: the container's stdio, attached through its node's engine and
 * attached again whenever it drops (a cut link, an engine restart, a daemon restart), until the
 * sandbox is closed. Frames of an attachment that dropped are lost; the harness's event log makes
 * the next connection replay what it did not see (src/harness/server.ts).
 */
export class SandboxLinks {
  readonly #links = new Map<string, Link>();
  constructor(readonly deps: LinkDeps) {}

  /** The sandbox's stream, attaching when there is none. `HARNESS_UNREACHABLE` when it cannot be attached. */
  stream(sandboxId: string, signal: AbortSignal): Promise<SandboxStream> {
    let link = this.#links.get(sandboxId);
    if (!link) {
      link = new Link(sandboxId, this.deps);
      this.#links.set(sandboxId, link);
    }
    return link.current(signal);
  }

  /** Whether an attachment is up now. */
  attached(sandboxId: string): boolean {
    return this.#links.get(sandboxId)?.up ?? false;
  }

  close(sandboxId: string): void {
    this.#links.get(sandboxId)?.close();
    this.#links.delete(sandboxId);
  }

  closeAll(): void {
    for (const id of [...this.#links.keys()]) this.close(id);
  }
}

class Link {
  #attaching: Promise<SandboxStream> | undefined;
  #stream: SandboxStream | undefined;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;
  #backoff = REATTACH_FIRST_MS;

  constructor(
    readonly sandboxId: string,
    readonly deps: LinkDeps,
  ) {}

  get up(): boolean {
    return this.#stream !== undefined;
  }

  current(signal: AbortSignal): Promise<SandboxStream> {
    if (this.#closed)
      return Promise.reject(new SwarmError("HARNESS_UNREACHABLE", `Sandbox ${this.sandboxId} is closed.`));
    if (this.#stream) return Promise.resolve(this.#stream);
    this.#attaching ??= this.#attach().finally(() => {
      this.#attaching = undefined;
    });
    return abortable(this.#attaching, signal);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#stream?.close();
    this.#stream = undefined;
  }

  async #attach(): Promise<SandboxStream> {
    const { sandboxId, deps } = this;
    let socket: NodeJS.ReadWriteStream;
    try {
      const where = await deps.locate(sandboxId);
      socket = (await where.docker.getContainer(where.containerId).attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
      })) as NodeJS.ReadWriteStream;
    } catch (err) {
      throw err instanceof SwarmError
        ? err
        : new SwarmError("HARNESS_UNREACHABLE", `Cannot attach to sandbox ${sandboxId}: ${errorMessage(err)}`, {
            cause: err,
          });
    }
    // A connection to a node that went away ends in an error (ETIMEDOUT, ECONNRESET): the stream's
    // end, never an uncaught error in the daemon.
    socket.on("error", (err: Error) => deps.log(`sandbox ${sandboxId}: its stream failed: ${err.message}`));
    let logged = 0;
    const output = demuxAttach(socket, (line) => {
      // What a sandbox writes to its standard error is logged up to a bound, cut to a line's length.
      if (logged >= STDERR_LOG_BYTES) return;
      logged += line.length;
      deps.log(`sandbox ${sandboxId}: ${line.slice(0, 500)}`);
    });
    // Its failure is the stream's end (the mux hears it); it must never be an uncaught error.
    output.on("error", () => undefined);
    const stream = openSandboxStream(
      { input: socket, output },
      {
        model: (channel: Duplex) => deps.model(sandboxId, channel),
        log: (message: string) => deps.log(`sandbox ${sandboxId}: ${message}`),
      },
    );
    void stream.ended.then((why) => {
      (socket as unknown as { destroy?: () => void }).destroy?.();
      if (this.#stream !== stream) return;
      this.#stream = undefined;
      // Another attach took the stream over (a second runtime on this data folder): not fought back.
      if (!(why as { superseded?: boolean }).superseded) this.#reattachLater();
    });
    try {
      await withTimeout(stream.ready, 15_000, `sandbox ${sandboxId}'s supervisor did not answer its hello`);
    } catch (err) {
      stream.close();
      throw new SwarmError("HARNESS_UNREACHABLE", errorMessage(err), { cause: err });
    }
    if (this.#closed) {
      stream.close();
      throw new SwarmError("HARNESS_UNREACHABLE", `Sandbox ${sandboxId} is closed.`);
    }
    this.#stream = stream;
    this.#backoff = REATTACH_FIRST_MS;
    return stream;
  }

  /** A dropped attachment is made again in the background, so the harness's model calls find a way out. */
  #reattachLater(): void {
    if (this.#closed) return;
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      if (this.#closed || this.#stream) return;
      this.current(AbortSignal.timeout(30_000)).catch(() => {
        this.#backoff = Math.min(this.#backoff * 2, REATTACH_MAX_MS);
        this.#reattachLater();
      });
    }, this.#backoff);
    this.#retry.unref();
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}
