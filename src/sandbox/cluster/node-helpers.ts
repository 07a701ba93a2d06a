import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { errorMessage } from "../../errors.ts";
import { engineStatus } from "../docker/engine.ts";
import { demuxAttach } from "../stream/attach-demux.ts";

/** The longest swarmd waits for one engine answer that is not a stream (a node cut off never answers). */
export const ENGINE_CALL_MS = 10_000;
export const quick = () => AbortSignal.timeout(ENGINE_CALL_MS);

/** The longest one copy or helper run on a node may take, whatever its caller allows. */
export const HELPER_RUN_MS = 15 * 60_000;

/** `signal`, cut at `ms`. */
export const within = (signal: AbortSignal, ms: number) => AbortSignal.any([signal, AbortSignal.timeout(ms)]);

/**
 * `call`, or a timeout error after `ms` (for a call whose answer is a stream, which an abort
 * signal would cut later); `dispose` takes what the call still answers after that.
 */
export function bounded<T>(call: Promise<T>, ms: number, dispose?: (late: T) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  return Promise.race([
    call.then((value) => {
      if (late) dispose?.(value);
      return value;
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(new Error(`the node's engine did not answer within ${ms} ms`));
      }, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The label every helper container carries, saying what it is for (`copy`, `tree`, `apply`). */
export const HELPER_LABEL = "swarmd.helper";

/** The output a helper run keeps (its exit code says the rest). */
const OUTPUT_BYTES = 16 * 1024;

export interface HelperOptions {
  image: string;
  /** Volume mounts, `name:/path[:options]`. */
  binds: string[];
  labels: Record<string, string>;
  /** What it runs when started; a helper only read through archives is never started. */
  cmd?: string[];
  /** Capabilities on top of none (a helper runs as root: `User 0:0`). */
  capAdd?: string[];
  /** A writable root (an archive put at `/` needs one: what lands outside the volumes is thrown away with the helper). */
  writableRoot?: boolean;
}

/**
 * A short-lived container on one node's engine, for what the swarm API cannot do with a volume:
 * copy it, read it or write it through the engine's archives. It mounts only the volumes it is
 * given (so a link in them leads nowhere but the image's own files), has no network, no
 * capability but those asked for, and `no-new-privileges`.
 */
export async function createHelper(docker: Docker, options: HelperOptions): Promise<Docker.Container> {
  return docker.createContainer({
    Image: options.image,
    Entrypoint: [],
    Cmd: options.cmd ?? ["true"],
    User: "0:0",
    Labels: { ...options.labels },
    NetworkDisabled: true,
    HostConfig: {
      Binds: options.binds,
      NetworkMode: "none",
      ReadonlyRootfs: options.writableRoot !== true,
      CapDrop: ["ALL"],
      CapAdd: options.capAdd ?? [],
      SecurityOpt: ["no-new-privileges"],
      LogConfig: { Type: "none", Config: {} },
    },
    abortSignal: quick(),
  } as Docker.ContainerCreateOptions);
}

/** Start a helper (again, when it ran before), wait for it to exit, and answer its exit code and output's head. */
export async function runHelper(
  container: Docker.Container,
  signal: AbortSignal,
): Promise<{ code: number; output: string }> {
  // Not aborted by a timer: the attach is the output's stream, which lives as long as the run.
  const attach = await bounded(
    container.attach({ stream: true, stdout: true, stderr: true }) as Promise<NodeJS.ReadableStream>,
    ENGINE_CALL_MS,
    (late) => (late as Readable).destroy?.(),
  );
  let output = "";
  const keep = (text: string) => {
    if (output.length < OUTPUT_BYTES) output = (output + text).slice(0, OUTPUT_BYTES);
  };
  const stdout = demuxAttach(attach, (line) => keep(`${line}\n`));
  stdout.on("data", (chunk: Buffer) => keep(chunk.toString("utf8")));
  stdout.on("error", () => undefined);
  const drained = new Promise<void>((resolve) => {
    stdout.once("end", resolve);
    stdout.once("close", resolve);
  });
  try {
    await container.start({ abortSignal: quick() } as object);
    const { StatusCode } = (await container.wait({ abortSignal: within(signal, HELPER_RUN_MS) } as object)) as {
      StatusCode: number;
    };
    // What it wrote last may still be on its way: a moment for the attach to end.
    await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    return { code: StatusCode, output };
  } finally {
    (attach as Readable).destroy?.();
  }
}

/** Remove a helper, whatever its state; one already gone is fine. Never throws: a failure is logged. */
export async function removeHelper(container: Docker.Container, log: (message: string) => void): Promise<void> {
  try {
    await container.remove({ force: true, abortSignal: quick() } as object);
  } catch (err) {
    if (engineStatus(err) !== 404) log(`a helper container ${container.id} was not removed: ${errorMessage(err)}`);
  }
}

/** Run `work` with a helper, removing it afterwards whatever happened. */
export async function withHelper<T>(
  docker: Docker,
  options: HelperOptions,
  log: (message: string) => void,
  work: (helper: Docker.Container) => Promise<T>,
): Promise<T> {
  const helper = await createHelper(docker, options);
  try {
    return await work(helper);
  } finally {
    await removeHelper(helper, log);
  }
}
