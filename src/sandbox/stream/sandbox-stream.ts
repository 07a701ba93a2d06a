import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import { SwarmError } from "../../errors.ts";
import {
  CHANNELS,
  type ControlAnswer,
  ControlAnswerSchema,
  type ControlRequest,
  MAX_INLINE_REQUEST_CHARS,
} from "../../harness/mux/control.ts";
import { createMux } from "../../harness/mux/mux.ts";

export type { ControlAnswer, ControlRequest } from "../../harness/mux/control.ts";

/** One attach of a cluster sandbox's stdio: the container's stdin, and its stdout already demultiplexed from stderr. */
export interface SandboxStreamIo {
  input: NodeJS.WritableStream;
  output: NodeJS.ReadableStream;
}

/**
 * The daemon's side of one attach to a cluster sandbox's supervisor (src/harness/supervisor.ts):
 * its control requests, harness connections opened over it, and the harness's model calls coming
 * back as channels (see src/harness/mux/). Everything the supervisor sends is untrusted: bad lines
 * are dropped and logged, and what the daemon holds for one sandbox is bounded (src/harness/mux/mux.ts).
 */
export interface SandboxStream {
  /** The supervisor answered this attach's hello: what came before (a stale attach's frames) was dropped. Rejects when the stream ends first. */
  ready: Promise<void>;
  /**
   * Ask the supervisor; resolves with its answer, `ok: false` included. Rejects with the signal's
   * reason when aborted, `HARNESS_UNREACHABLE` when the stream ends before the answer (the
   * request may or may not have been carried out: every request is idempotent, ask again on the next attach).
   */
  request(op: ControlRequest, signal: AbortSignal): Promise<ControlAnswer>;
  /** A new connection to the harness, served as a socket connection would be (it replaces the harness's current client). Closed at once when no harness runs. */
  openHarness(): Duplex;
  /** Resolves (never rejects) when the attach ended, failed or was closed; every channel is closed by then. */
  ended: Promise<Error>;
  /** Close every channel and stop reading. The attach's streams are the caller's to end. */
  close(): void;
}

export interface SandboxStreamHandlers {
  /** The harness opened a connection for its model calls: connect it to the sandbox's gateway. */
  model(channel: Duplex): void;
  /** Protocol errors (rate-limited). */
  log?(message: string): void;
}

export function openSandboxStream(io: SandboxStreamIo, handlers: SandboxStreamHandlers): SandboxStream {
  const nonce = randomBytes(16).toString("hex");
  const log = handlers.log ?? (() => undefined);
  const pending = new Map<number, { resolve(answer: ControlAnswer): void; reject(err: Error): void }>();
  let nextRequest = 1;
  let endedWith: Error | undefined;
  let answerHello!: () => void;
  let failHello!: (err: Error) => void;
  let announceEnd!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    answerHello = resolve;
    failHello = reject;
  });
  ready.catch(() => undefined);
  const ended = new Promise<Error>((resolve) => (announceEnd = resolve));

  const mux = createMux({
    input: io.output,
    output: io.input,
    firstId: 1,
    live: false,
    log,
    onOpen(name, channel) {
      if (name === CHANNELS.model) handlers.model(channel);
      else {
        log(`the supervisor opened a channel named ${JSON.stringify(name)}, which the daemon does not serve`);
        channel.destroy();
      }
    },
    onControl(frame) {
      if (frame.t === "hello") {
        // Every attach of a container reads all of its output: a hello answered for another
        // attach means the supervisor now serves that one, and this one is over.
        if (frame.nonce !== nonce && mux.live) {
          mux.destroy(Object.assign(new Error("another attach took this sandbox's stream over"), { superseded: true }));
          return;
        }
        if (frame.nonce !== nonce || mux.live) return;
        mux.live = true;
        answerHello();
        return;
      }
      if (!mux.live) return; // an answer to a request of an earlier attach
      if (frame.t !== "res" || typeof frame.id !== "number") return log(`dropped a control frame of type ${frame.t}`);
      const waiter = pending.get(frame.id);
      if (!waiter) return log(`dropped an answer to request ${frame.id}, which is not waiting`);
      const { c: _c, t: _t, id: _id, ...answer } = frame;
      const parsed = ControlAnswerSchema.safeParse(answer);
      waiter.resolve(parsed.success ? parsed.data : { ok: false, error: "the supervisor's answer was malformed" });
    },
    onEnd(error) {
      endedWith = error;
      failHello(error);
      for (const waiter of pending.values())
        waiter.reject(
          new SwarmError(
            "HARNESS_UNREACHABLE",
            `the sandbox's stream ended before the supervisor answered: ${error.message}`,
          ),
        );
      pending.clear();
      announceEnd(error);
    },
  });
  mux.control({ t: "hello", nonce });

  return {
    ready,
    ended,
    request(op, signal) {
      if (signal.aborted) return Promise.reject(signal.reason as Error);
      if (endedWith)
        return Promise.reject(
          new SwarmError("HARNESS_UNREACHABLE", `the sandbox's stream ended: ${endedWith.message}`),
        );
      const id = nextRequest++;
      return new Promise<ControlAnswer>((resolve, reject) => {
        const onAbort = () => {
          pending.delete(id);
          reject(signal.reason as Error);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        const settle =
          <T>(fn: (value: T) => void) =>
          (value: T) => {
            signal.removeEventListener("abort", onAbort);
            pending.delete(id);
            fn(value);
          };
        pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
        const body = JSON.stringify(op);
        if (body.length <= MAX_INLINE_REQUEST_CHARS) {
          mux.control({ t: "req", id, ...op });
        } else {
          const channel = mux.open(CHANNELS.request);
          channel.on("error", () => undefined);
          channel.end(body);
          mux.control({ t: "req", id, op: op.op, body: channel.id });
        }
      });
    },
    openHarness: () => mux.open(CHANNELS.harness),
    close: () => mux.destroy(new Error("the stream was closed")),
  };
}
