import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { howItEnded } from "./detached-spawn.ts";
import type { LaunchAnswer, LaunchRequest } from "./launcher-main.ts";

const MAIN = fileURLToPath(new URL("./launcher-main.ts", import.meta.url));

/** A process the launcher started: its pid, and how it ended once it did (`exited with code 1`). */
export interface Launched {
  pid: number;
  exited(): string | undefined;
}

/**
 * Starts processes through a small helper process (launcher-main.ts), made at the first start and
 * again after it ended, so the daemon forks itself once rather than once per harness. The helper
 * gets a plain environment (PATH), nothing of the daemon's. Requests made while one helper ends
 * fail with its end; the next request makes a new one.
 */
export interface Launcher {
  launch(request: Omit<LaunchRequest, "id">): Promise<Launched>;
  close(): void;
}

interface Pending {
  resolve(launched: Launched): void;
  reject(err: Error): void;
}

interface Exit {
  ended?: string;
}

export function createLauncher(): Launcher {
  let helper: ChildProcess | undefined;
  let next = 0;
  const pending = new Map<number, Pending>();
  const exits = new Map<number, Exit>();

  // The channel keeps the daemon's event loop alive only while a start waits for its answer.
  const refWhileWaiting = () => {
    if (pending.size > 0) helper?.channel?.ref();
    else helper?.channel?.unref();
  };

  const start = (): ChildProcess => {
    const child = fork(MAIN, [], {
      execArgv: [],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      serialization: "json",
    });
    child.on("message", (message: LaunchAnswer) => {
      if ("exit" in message) {
        const exit = exits.get(message.id);
        exits.delete(message.id);
        if (exit) exit.ended = howItEnded(message.exit.code, message.exit.signal);
        return;
      }
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      refWhileWaiting();
      if (!waiting) return;
      if ("error" in message) {
        exits.delete(message.id);
        waiting.reject(new Error(message.error));
        return;
      }
      const exit = exits.get(message.id) ?? {};
      waiting.resolve({ pid: message.pid, exited: () => exit.ended });
    });
    child.once("exit", (code, signal) => {
      if (helper === child) helper = undefined;
      const why = new Error(`the harness launcher ended (${signal ?? `code ${code}`})`);
      for (const waiting of pending.values()) waiting.reject(why);
      pending.clear();
      // Its children live on, but their ends can no longer be told: taken as unknown, not as ended.
      exits.clear();
    });
    child.unref();
    return child;
  };

  const send = (request: Omit<LaunchRequest, "id">, retry: boolean): Promise<Launched> => {
    if (!helper?.connected) helper = start();
    const to = helper;
    const id = ++next;
    return new Promise<Launched>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      exits.set(id, {});
      refWhileWaiting();
      to.send({ ...request, id } satisfies LaunchRequest, (err) => {
        if (!err || !pending.has(id)) return;
        pending.delete(id);
        exits.delete(id);
        refWhileWaiting();
        // A helper that died before this daemon saw it end (its channel broke): once more with a new one.
        if (!retry) return reject(err);
        if (helper === to) helper = undefined;
        to.kill("SIGKILL");
        send(request, false).then(resolve, reject);
      });
    });
  };

  return {
    launch: (request) => send(request, true),
    close() {
      helper?.disconnect();
      helper = undefined;
    },
  };
}
