import { errorMessage, SwarmError } from "../errors.ts";
import { socketAccepts } from "../harness/socket-probe.ts";
import { pollUntil } from "./poll.ts";
import { tailControlFile } from "./safe-read.ts";

const OUTPUT_TAIL_BYTES = 4096;

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
 * is connected to a harness that is just starting). Rejects with `HARNESS_START_FAILED`, carrying
 * the end of the harness's output, as soon as the harness exits or at the deadline; an abort
 * rejects with the signal's reason.
 */
export async function waitForHarness(socketPath: string, options: WaitForHarnessOptions): Promise<void> {
  try {
    await pollUntil(
      async () => {
        if (await socketAccepts(socketPath)) return true;
        const exit = await options.exited();
        if (exit !== undefined) throw new Error(`the harness ${exit} before its socket accepted connections`);
        return undefined;
      },
      { timeoutMs: options.timeoutMs, intervalMs: 50, signal: options.signal, what: "the harness socket to accept connections" },
    );
  } catch (err) {
    if (options.signal.aborted) throw options.signal.reason;
    const output = await tail(options.outputFile, OUTPUT_TAIL_BYTES);
    throw new SwarmError("HARNESS_START_FAILED", `${errorMessage(err)}; harness output:\n${output || "(none)"}`, { cause: err });
  }
}

/** The output's end; the agent can reach the control folder, so the file is read without following links or blocking. */
async function tail(path: string, bytes: number): Promise<string> {
  try {
    return (await tailControlFile(path, bytes)).toString("utf8").trim();
  } catch {
    return "";
  }
}
