import { randomUUID } from "node:crypto";
import type { Duplex } from "node:stream";
import { SwarmError } from "../errors.ts";
import { jsonLine, readJsonLines } from "./jsonl.ts";
import type {
  HarnessCommand,
  HarnessErrorCode,
  HarnessEventMessage,
  HostCallMessage,
  ResponseMessage,
} from "./protocol.ts";
import { createLimitedLog, createTokenBucket } from "./rate-gate.ts";
import { MAX_HARNESS_LINE_BYTES, MAX_HSEQ_STEP, parseHarnessLine } from "./wire-schemas.ts";

/** The harness answered a command with a failure; `harnessCode` says which, when the daemon acts on it. */
export class HarnessRejected extends SwarmError {
  constructor(
    message: string,
    readonly harnessCode: HarnessErrorCode | undefined,
  ) {
    super("HARNESS_REJECTED", message);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type CommandInput = DistributiveOmit<HarnessCommand, "id">;

export interface HarnessClientHandlers {
  /** Every event after `after`, in hseq order, exactly once per connection. */
  onEvent(event: HarnessEventMessage): void;
  /** A host call from the agent (`size`: its line's length); answer with `client.answer(...)`. */
  onHostCall?(call: HostCallMessage, size: number): void;
  /** The connection ended (harness exited, sandbox closed, or replaced by a newer client). */
  onClose?(): void;
  /** Where dropped lines and throttling are reported (rate-limited: once per burst). */
  log?(message: string): void;
}

/** How fast one harness connection is read; above it, reading pauses until the bucket refills. */
export const HARNESS_READ_LIMITS = {
  lines: { burst: 10_000, perSecond: 5_000 },
  bytes: { burst: 32 * 1024 * 1024, perSecond: 16 * 1024 * 1024 },
} as const;

/**
 * The service's side of one harness connection. Commands resolve with the harness's `data` or
 * reject with `HARNESS_REJECTED` (carrying the harness's message) / `HARNESS_TIMEOUT` /
 * `HARNESS_UNREACHABLE` when the connection ends first.
 */
export interface HarnessClient {
  request(command: CommandInput, timeoutMs?: number): Promise<unknown>;
  answer(id: string, result: { ok: true; data: unknown } | { ok: false; error: string }): void;
  readonly closed: boolean;
  close(): void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Take over a connected socket (or an in-process stream, the simulated runtime's): say hello
 * (replay after `after`) and route what comes back.
 * Everything the harness sends is untrusted: a line is parsed against the wire schemas and dropped
 * (logged, rate-limited) when it is not JSON, does not match, is longer than
 * `MAX_HARNESS_LINE_BYTES`, or is an event whose hseq is not above the last one or jumps more than
 * `MAX_HSEQ_STEP`. Reading pauses while the harness sends faster than `HARNESS_READ_LIMITS`.
 * Handlers that throw are caught and logged; nothing a harness sends throws out of here.
 */
export function attachHarnessClient(socket: Duplex, after: number, handlers: HarnessClientHandlers): HarnessClient {
  const pending = new Map<
    string,
    { resolve: (data: unknown) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }
  >();
  let closed = false;
  let lastHseq = Math.max(0, after);
  const log = handlers.log ?? (() => undefined);
  const dropped = createLimitedLog(log);
  const throttled = createLimitedLog(log);
  const lines = createTokenBucket(HARNESS_READ_LIMITS.lines.burst, HARNESS_READ_LIMITS.lines.perSecond);
  const bytes = createTokenBucket(HARNESS_READ_LIMITS.bytes.burst, HARNESS_READ_LIMITS.bytes.perSecond);
  let resumeTimer: NodeJS.Timeout | undefined;

  const slowDown = (waitMs: number) => {
    if (waitMs <= 0 || resumeTimer !== undefined || closed) return;
    throttled(
      `the harness sends faster than ${HARNESS_READ_LIMITS.lines.perSecond} lines/s or ${HARNESS_READ_LIMITS.bytes.perSecond} bytes/s: reading paused`,
    );
    socket.pause();
    resumeTimer = setTimeout(() => {
      resumeTimer = undefined;
      if (!closed) socket.resume();
    }, waitMs);
  };
  const guarded = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      dropped(`handling a harness ${what} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const fail = (err: Error) => {
    for (const entry of pending.values()) {
      clearTimeout(entry.timer);
      entry.reject(err);
    }
    pending.clear();
  };

  socket.on("data", (chunk: Buffer | string) => slowDown(bytes.take(chunk.length)));
  readJsonLines(socket, MAX_HARNESS_LINE_BYTES, (item) => {
    slowDown(lines.take(1));
    if (!("line" in item)) {
      dropped(`dropped a harness line of ${item.tooLong} characters (limit ${MAX_HARNESS_LINE_BYTES})`);
      return;
    }
    if (item.line.length === 0) return;
    const parsed = parseHarnessLine(item.line);
    if (!parsed.ok) {
      dropped(`dropped a bad harness line: ${parsed.reason}`);
      return;
    }
    const message = parsed.message;
    if (message.type === "event") {
      if (message.hseq <= lastHseq) return; // already delivered on this connection
      if (message.hseq - lastHseq > MAX_HSEQ_STEP) {
        dropped(
          `dropped a harness event whose hseq ${message.hseq} jumps past ${lastHseq} by more than ${MAX_HSEQ_STEP}`,
        );
        return;
      }
      lastHseq = message.hseq;
      guarded("event", () => handlers.onEvent(message));
    } else if (message.type === "host_call") {
      guarded("host call", () => handlers.onHostCall?.(message, item.line.length));
    } else {
      guarded("response", () => settle(message));
    }
  });
  socket.on("error", () => socket.destroy());
  socket.on("close", () => {
    closed = true;
    clearTimeout(resumeTimer);
    // Made only when a request waits: an error's stack trace is the dearest part of a close.
    if (pending.size > 0) fail(new SwarmError("HARNESS_UNREACHABLE", "the harness connection closed"));
    guarded("close", () => handlers.onClose?.());
  });

  const settle = (response: ResponseMessage) => {
    const entry = response.id === undefined ? undefined : pending.get(response.id);
    if (!entry || response.id === undefined) return;
    pending.delete(response.id);
    clearTimeout(entry.timer);
    if (response.success) entry.resolve(response.data);
    else entry.reject(new HarnessRejected(response.error ?? `the harness refused ${response.command}`, response.code));
  };

  socket.write(jsonLine({ type: "hello", after }));

  return {
    get closed() {
      return closed;
    },
    request(command, timeoutMs = DEFAULT_TIMEOUT_MS) {
      if (closed) return Promise.reject(new SwarmError("HARNESS_UNREACHABLE", "the harness connection is closed"));
      const id = randomUUID();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(
            new SwarmError("HARNESS_TIMEOUT", `the harness did not answer ${command.type} within ${timeoutMs} ms`),
          );
        }, timeoutMs);
        pending.set(id, { resolve, reject, timer });
        socket.write(jsonLine({ ...command, id }));
      });
    },
    answer(id, result) {
      if (!closed) socket.write(jsonLine({ type: "host_result", id, ...result }));
    },
    close() {
      socket.destroy();
    },
  };
}
