import { type FSWatcher, watch } from "node:fs";
import { dirname } from "node:path";
import { errorMessage, SwarmError } from "../errors.ts";
import { socketAccepts } from "../harness/socket-probe.ts";
import { tailControlFile } from "./safe-read.ts";

const OUTPUT_TAIL_BYTES = 4096;
/** The longest wait between two probes, and between two checks that the harness still runs. */
const POLL_MS = 50;

export interface WaitForHarnessOptions {
  /** The harness's stdout and stderr, quoted in the error: that is where a bad spec or a missing library shows. */
  outputFile: string;
  /** How the harness process ended (`exited with code 1`), or `undefined` while it runs. */
  exited: () => Promise<string | undefined> | string | undefined;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * Resolve once a just-started harness's socket accepts a connection (closed at once: nobody else
 * is connected to a harness that is just starting). The socket is probed whenever the control
 * folder changes (the harness binds its socket there, then writes its ready line to its output
 * there), and every 50 ms in any case. Rejects with `HARNESS_START_FAILED`, carrying the end of
 * the harness's output, as soon as the harness exits or at the deadline; an abort rejects with the
 * signal's reason.
 */
export async function waitForHarness(socketPath: string, options: WaitForHarnessOptions): Promise<void> {
  const changes = folderChanges(dirname(socketPath));
  try {
    const deadline = Date.now() + options.timeoutMs;
    let checkedExit = 0;
    for (;;) {
      options.signal.throwIfAborted();
      if (await socketAccepts(socketPath)) return;
      // The exit is checked at the poll's pace only: it may cost a call to the engine.
      if (Date.now() - checkedExit >= POLL_MS) {
        checkedExit = Date.now();
        const exit = await options.exited();
        if (exit !== undefined) throw new Error(`the harness ${exit} before its socket accepted connections`);
      }
      if (Date.now() > deadline)
        throw new Error(`timed out after ${options.timeoutMs} ms waiting for the harness socket to accept connections`);
      await changes.next(POLL_MS, options.signal);
    }
  } catch (err) {
    if (options.signal.aborted) throw options.signal.reason;
    const output = await tail(options.outputFile, OUTPUT_TAIL_BYTES);
    throw new SwarmError("HARNESS_START_FAILED", `${errorMessage(err)}; harness output:\n${output || "(none)"}`, {
      cause: err,
    });
  } finally {
    changes.close();
  }
}

/** Changes in a folder (inotify); without a watch (none left, no folder) `next` is a plain wait. */
function folderChanges(dir: string): { next(ms: number, signal: AbortSignal): Promise<void>; close(): void } {
  let changed = false;
  let wake: (() => void) | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, () => {
      changed = true;
      wake?.();
    });
    watcher.on("error", () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  return {
    next: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (changed || signal.aborted) {
          changed = false;
          resolve();
          return;
        }
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          wake = undefined;
          changed = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener("abort", done, { once: true });
        wake = done;
      }),
    close: () => watcher?.close(),
  };
}

/** The output's end; the agent can reach the control folder, so the file is read without following links or blocking. */
async function tail(path: string, bytes: number): Promise<string> {
  try {
    return (await tailControlFile(path, bytes)).toString("utf8").trim();
  } catch {
    return "";
  }
}
