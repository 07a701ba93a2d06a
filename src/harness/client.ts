import { randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import { SwarmError } from "../errors.ts";
import { jsonLine, readJsonLines } from "./jsonl.ts";
import {
  MAX_LINE_BYTES,
  type HarnessCommand,
  type HarnessEventMessage,
  type HarnessMessage,
  type HostCallMessage,
  type ResponseMessage,
} from "./protocol.ts";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type CommandInput = DistributiveOmit<HarnessCommand, "id">;

export interface HarnessClientHandlers {
  /** Every event after `after`, in hseq order, exactly once per connection. */
  onEvent(event: HarnessEventMessage): void;
  /** A host call from the agent; answer with `client.answer(...)`. */
  onHostCall?(call: HostCallMessage): void;
  /** The connection ended (harness exited, sandbox closed, or replaced by a newer client). */
  onClose?(): void;
}

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

/** Take over a connected socket: say hello (replay after `after`) and route what comes back. */
export function attachHarnessClient(socket: Socket, after: number, handlers: HarnessClientHandlers): HarnessClient {
  const pending = new Map<string, { resolve: (data: unknown) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
  let closed = false;

  const fail = (err: Error) => {
    for (const entry of pending.values()) {
      clearTimeout(entry.timer);
      entry.reject(err);
    }
    pending.clear();
  };

  readJsonLines(socket, MAX_LINE_BYTES * 4, (item) => {
    if (!("line" in item) || item.line.length === 0) return;
    let message: HarnessMessage;
    try {
      message = JSON.parse(item.line) as HarnessMessage;
    } catch {
      return; // a harness never sends bad JSON; ignore rather than tear down the connection
    }
    if (message.type === "event") handlers.onEvent(message);
    else if (message.type === "host_call") handlers.onHostCall?.(message);
    else if (message.type === "response") settle(message);
  });
  socket.on("error", () => socket.destroy());
  socket.on("close", () => {
    closed = true;
    fail(new SwarmError("HARNESS_UNREACHABLE", "the harness connection closed"));
    handlers.onClose?.();
  });

  const settle = (response: ResponseMessage) => {
    const entry = response.id === undefined ? undefined : pending.get(response.id);
    if (!entry || response.id === undefined) return;
    pending.delete(response.id);
    clearTimeout(entry.timer);
    if (response.success) entry.resolve(response.data);
    else entry.reject(new SwarmError("HARNESS_REJECTED", response.error ?? `the harness refused ${response.command}`));
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
          reject(new SwarmError("HARNESS_TIMEOUT", `the harness did not answer ${command.type} within ${timeoutMs} ms`));
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
