import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { CommandRunner } from "../command.ts";
import { howItEnded } from "./detached-spawn.ts";
import type { LaunchAnswer, LaunchRequest, RunRequest } from "./launcher-main.ts";
import { isAliveProc, readProcSync } from "./proc-table.ts";

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
  /** Run a command to its end (the disk watch's `du`): its stdout, and what failed if it did. */
  run: CommandRunner;
  close(): void;
}

/** A request waiting for its first answer. */
interface Pending {
  answer(message: LaunchAnswer): void;
  reject(err: Error): void;
}

interface Exit {
  ended?: string;
  pid?: number;
  /**
   * Set once its helper ended without telling this end: the process's start time as /proc had it
   * then (it and the pid name this process and no later one), or null when it was gone already.
   */
  orphan?: string | null;
}

/** How a process ended when its helper ended first: that it did is seen in /proc, how is not. */
export const ENDED_UNTOLD = "ended after its launcher did (how is not known)";

/** `exit`'s end: as its helper told it, or, once the helper ended, whether /proc still has the process. */
function endOf(exit: Exit): string | undefined {
  if (exit.ended !== undefined || exit.orphan === undefined || exit.pid === undefined) return exit.ended;
  const entry = exit.orphan === null ? undefined : readProcSync(exit.pid);
  if (isAliveProc(entry) && entry.startTime === exit.orphan) return undefined;
  exit.ended = ENDED_UNTOLD;
  return exit.ended;
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
      if ("error" in message) exits.delete(message.id);
      refWhileWaiting();
      waiting?.answer(message);
    });
    child.once("exit", (code, signal) => {
      if (helper === child) helper = undefined;
      const why = new Error(`the harness launcher ended (${signal ?? `code ${code}`})`);
      for (const waiting of pending.values()) waiting.reject(why);
      pending.clear();
      // Its children live on, but their ends can no longer be told: from now on /proc says whether
      // each still runs (the same pid and start time), so a start does not wait out its deadline
      // for a harness that already died.
      for (const exit of exits.values()) {
        if (exit.pid === undefined) continue;
        const entry = readProcSync(exit.pid);
        exit.orphan = isAliveProc(entry) ? entry.startTime : null;
      }
      exits.clear();
    });
    child.unref();
    return child;
  };

  /** Send `request` with a new id: its first answer, and where a launch's end will be told. */
  const send = (
    request: Omit<LaunchRequest, "id"> | Omit<RunRequest, "id">,
    retry: boolean,
  ): Promise<{ message: LaunchAnswer; exit: Exit }> => {
    if (!helper?.connected) helper = start();
    const to = helper;
    const id = ++next;
    const exit: Exit = {};
    return new Promise((resolve, reject) => {
      pending.set(id, { answer: (message) => resolve({ message, exit }), reject });
      // Registered now: a process that ends at once has its end told right after its pid.
      if (!("run" in request)) exits.set(id, exit);
      refWhileWaiting();
      to.send({ ...request, id }, (err) => {
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

  const launch = async (request: Omit<LaunchRequest, "id">): Promise<Launched> => {
    const { message, exit } = await send(request, true);
    if ("pid" in message) {
      exit.pid = message.pid;
      return { pid: message.pid, exited: () => endOf(exit) };
    }
    throw new Error("error" in message ? message.error : "the launcher answered a start out of turn");
  };

  const run: CommandRunner = async (command) => {
    const { message } = await send({ run: command }, true);
    if (!("ran" in message)) throw new Error("the launcher answered a command out of turn");
    return { stdout: message.ran.stdout, ...(message.ran.error ? { error: new Error(message.ran.error) } : {}) };
  };

  return {
    launch,
    run,
    close() {
      helper?.disconnect();
      helper = undefined;
    },
  };
}
