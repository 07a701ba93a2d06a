import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ControlAnswer, ControlRequest } from "./mux/control.ts";
import type { MuxChannel } from "./mux/mux.ts";
import { CONTROL_FILES } from "./protocol.ts";
import { type HarnessChild, spawnHarnessChild } from "./supervisor-child.ts";

/** How long a harness may take to serve after its start. */
export const START_TIMEOUT_MS = 120_000;

/** Where the supervisor keeps the sandbox's files and how it starts its harness. */
export interface SupervisorConfig {
  controlDir: string;
  workDir: string;
  inputsDir: string;
  /** The argv of a harness in stdio mode (node, its flags, the boot and its arguments). */
  harnessArgv: string[];
  log(message: string): void;
  /** The harness opened a model connection: carry it to the daemon. */
  onModel(channel: MuxChannel): void;
}

/** The supervisor's state and its answers to the daemon's control requests (see control.ts). */
export interface SupervisorRequests {
  handle(request: ControlRequest): Promise<ControlAnswer>;
  /** A connection to the harness, when it serves. */
  openHarness(): MuxChannel | undefined;
  /** End the harness (the supervisor is ending). */
  stop(): Promise<void>;
}

export function createSupervisorRequests(config: SupervisorConfig): SupervisorRequests {
  let env: Record<string, string> = {};
  let child: HarnessChild | undefined;
  let hibernated = false;
  /** Its harness served, then ended on its own (not for `hibernate`): the sandbox is of no more use. */
  let ended = false;

  const start = async (): Promise<ControlAnswer> => {
    if (!child?.running) {
      const started = spawnHarnessChild({
        argv: config.harnessArgv,
        env: { ...stringEnv(process.env), ...env },
        cwd: config.workDir,
        onModel: config.onModel,
        log: config.log,
      });
      child = started;
      let served = false;
      started.ready.then(
        () => {
          served = true;
        },
        () => undefined,
      );
      void started.exited.then(() => {
        if (child === started) child = undefined;
        if (served && !hibernated) ended = true;
      });
    }
    const current = child;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the harness did not serve within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([current.ready, late]);
    } catch (err) {
      // One that hangs is ended, so the next start starts afresh.
      await current.stop();
      return { ok: false, error: (err as Error).message };
    } finally {
      clearTimeout(timer);
    }
    hibernated = false;
    return { ok: true };
  };

  const handle = async (request: ControlRequest): Promise<ControlAnswer> => {
    switch (request.op) {
      case "init":
        if (request.spec !== undefined)
          writePrivate(join(config.controlDir, CONTROL_FILES.spec), JSON.stringify(request.spec));
        if (request.model !== undefined) writePrivate(join(config.controlDir, CONTROL_FILES.model), request.model);
        if (request.env !== undefined) env = request.env;
        return { ok: true };
      case "inputs": {
        const bad = Object.keys(request.files).find((name) => !plainName(name));
        if (bad !== undefined)
          return { ok: false, error: `input name ${JSON.stringify(bad)} is not a plain file name` };
        for (const [name, text] of Object.entries(request.files))
          writeAtomic(join(config.inputsDir, name), text, 0o644);
        return { ok: true };
      }
      case "start":
        return start();
      case "hibernate":
        if (child?.running) {
          hibernated = true;
          await child.stop();
        }
        return { ok: true };
      case "status":
        return { ok: true, harness: child?.running ? "running" : "stopped", hibernated, ended };
    }
  };

  const attempt = async (request: ControlRequest): Promise<ControlAnswer> => {
    try {
      return await handle(request);
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  };
  // One change at a time, in the order asked: a start asked during a hibernation waits for the
  // harness to be gone rather than finding it still running. A status is answered at once.
  let queue: Promise<unknown> = Promise.resolve();
  return {
    handle(request) {
      if (request.op === "status") return attempt(request);
      const answer = queue.then(() => attempt(request));
      queue = answer;
      return answer;
    },
    openHarness: () => child?.openHarness(),
    stop: async () => child?.stop(),
  };
}

/** As the daemon checks input names (src/sandbox/input-names.ts): one file name, no path. */
function plainName(name: string): boolean {
  return (
    name.length > 0 &&
    name !== "." &&
    name !== ".." &&
    !name.includes("/") &&
    !name.includes("\0") &&
    Buffer.byteLength(name) <= 255
  );
}

const writePrivate = (path: string, text: string) => writeAtomic(path, text, 0o600);

/** Written beside, then renamed over: a harness starting meanwhile reads the old file or the new one, never half of one. */
function writeAtomic(path: string, text: string, mode: number): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode });
  renameSync(temporary, path);
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}
