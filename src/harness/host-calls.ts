import type { HostCallMessage, HostResultMessage } from "./protocol.ts";

type Send = (message: HostCallMessage) => void;

interface Pending {
  message: HostCallMessage;
  resolve: (data: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * Calls from the harness to the service (`host_call` → `host_result`). A call made while no
 * service is connected waits for one; every unanswered call is sent again to each new connection,
 * with the same `id`, so the service can treat the id as an idempotency key across its restarts.
 * The id comes from Web Crypto's global, which node loads on first use: an agent that never calls
 * its host does not pay for loading node's crypto (~9 ms of every harness start otherwise).
 */
export interface HostCalls {
  call(method: HostCallMessage["method"], params: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
  /** A client connected (send pending calls to it) or left (`undefined`). */
  attach(send: Send | undefined): void;
  /** Route a `host_result`; returns false when no call has that id. */
  settle(result: HostResultMessage): boolean;
}

export function createHostCalls(): HostCalls {
  const pending = new Map<string, Pending>();
  let send: Send | undefined;

  return {
    call(method, params, signal) {
      const message: HostCallMessage = { type: "host_call", id: globalThis.crypto.randomUUID(), method, params };
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(new Error("aborted"));
        const onAbort = () => {
          pending.delete(message.id);
          reject(new Error("aborted"));
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        pending.set(message.id, {
          message,
          resolve: (data) => {
            signal?.removeEventListener("abort", onAbort);
            resolve(data);
          },
          reject: (error) => {
            signal?.removeEventListener("abort", onAbort);
            reject(error);
          },
        });
        send?.(message);
      });
    },
    attach(next) {
      send = next;
      if (next) for (const entry of pending.values()) next(entry.message);
    },
    settle(result) {
      const entry = pending.get(result.id);
      if (!entry) return false;
      pending.delete(result.id);
      if (result.ok) entry.resolve(result.data);
      else entry.reject(new Error(result.error ?? "the service refused the call"));
      return true;
    },
  };
}
