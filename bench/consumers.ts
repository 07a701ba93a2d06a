import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { ConsumerMessage } from "./sse-consumers.ts";

const tsxLoader = createRequire(import.meta.url).resolve("tsx");
const script = fileURLToPath(new URL("./sse-consumers.ts", import.meta.url));

export interface ConsumerResult {
  /** Milliseconds from the clients' requests to the last one receiving the target seq (their clock). */
  ms: number;
  /** `performance.now()` of this process when the child said done. */
  doneAt: number;
  frames: number;
  gaps: number;
}

/** SSE clients in a child process (see sse-consumers.ts). */
export interface Consumers {
  /** Every client has its 200 and is reading. */
  ready: Promise<void>;
  /** Every client has the target seq; rejects when one lost its stream first. */
  done: Promise<ConsumerResult>;
  stop(): void;
}

export function startConsumers(options: {
  url: string;
  clients: number;
  lastEventId: number;
  targetSeq: number;
}): Consumers {
  const child = fork(
    script,
    [options.url, String(options.clients), String(options.lastEventId), String(options.targetSeq)],
    {
      execArgv: ["--import", tsxLoader],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const ready = deferred<void>();
  const done = deferred<ConsumerResult>();
  const fail = (err: Error) => {
    ready.reject(err);
    done.reject(err);
  };
  child.on("message", (m: ConsumerMessage) => {
    if (m.type === "ready") ready.resolve();
    else if (m.type === "done") done.resolve({ ms: m.ms, doneAt: performance.now(), frames: m.frames, gaps: m.gaps });
    else fail(new Error(`SSE consumers: ${m.reason}`));
  });
  child.on("exit", (code) => fail(new Error(`SSE consumers exited with ${code}`)));
  return { ready: ready.promise, done: done.promise, stop: () => void (child.connected && child.disconnect()) };
}

function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (err: Error) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Whoever awaits only one of ready/done must not see the other as an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
