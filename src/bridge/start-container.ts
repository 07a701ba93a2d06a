import { errorMessage } from "../errors.ts";
import { openEngine, pingEngine } from "../sandbox/docker/engine.ts";
import { defaultSandboxImage } from "../sandbox/docker/sandbox-image.ts";

/** What the daemon needs to listen where `SWARM_URL` points. */
export interface Listen {
  host: string;
  port: number;
  dataDir: string;
  /** The checkout whose `src/main.ts` runs (what `make run` runs). */
  root: string;
}

export interface StartedContainer {
  info: { containerId: string; containerName: string; image: string; log: string };
  /** Resolves with a description (and the log's end) if the container stops. */
  exited: Promise<string>;
}

/**
 * swarmd in a container, with the docker runtime, so sandboxes are containers beside it. It runs
 * from the local sandbox image (`make sandbox-image`: node, no registry pull) with:
 * - the checkout and the data folder mounted at their host paths, because the daemon asks the
 *   engine to bind-mount sandbox folders and the checkout by path, and the engine resolves paths
 *   on the host;
 * - the engine's socket, so it can create those sandboxes;
 * - the host's network, so it listens on the loopback address `SWARM_URL` names (sandboxes keep
 *   network none).
 * An old stopped container of the same name (one per port) is replaced. Throws when no engine
 * answers or the image is missing.
 */
export async function startContainer(
  listen: Listen,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<StartedContainer> {
  await pingEngine(); // RUNTIME_UNAVAILABLE, naming DOCKER_HOST or the default socket
  const { docker } = openEngine();
  const image = env.SWARM_DOCKER_IMAGE || defaultSandboxImage();
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(
      `The image ${image} is missing: build it with \`make sandbox-image\` in ${listen.root} (no registry pull needed), or set SWARM_DOCKER_IMAGE.`,
    );
  }
  const name = `swarmd-daemon-${listen.port}`;
  const old = docker.getContainer(name);
  const state = await old.inspect().then(
    (i) => i.State,
    () => undefined,
  );
  if (state?.Running) await old.stop({ t: 10 }).catch(() => undefined);
  if (state) await old.remove({ force: true });
  if (signal?.aborted) throw signal.reason;

  const socket = dockerSocket(env);
  const daemonEnv: Record<string, string | undefined> = {
    SWARM_HOST: listen.host,
    SWARM_PORT: String(listen.port),
    SWARM_RUNTIME: "docker",
    SWARM_DATA_DIR: listen.dataDir,
    SWARM_TOKEN: env.SWARM_TOKEN,
    SWARM_DOCKER_IMAGE: env.SWARM_DOCKER_IMAGE,
    SWARM_TURN_MAX_MS: env.SWARM_TURN_MAX_MS,
    DOCKER_HOST: socket ? undefined : env.DOCKER_HOST,
  };
  const container = await docker.createContainer({
    name,
    Image: image,
    Cmd: ["/usr/local/bin/node", "--import", "tsx", "src/main.ts"],
    WorkingDir: listen.root,
    User: "0:0",
    Env: Object.entries(daemonEnv).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`])),
    Labels: { "swarmd.role": "daemon", "swarmd.port": String(listen.port) },
    HostConfig: {
      NetworkMode: "host",
      Binds: [
        `${listen.root}:${listen.root}:ro`,
        `${listen.dataDir}:${listen.dataDir}`,
        ...(socket ? [`${socket}:/var/run/docker.sock`] : []),
      ],
    },
  });
  await container.start();
  const exited = container.wait().then(async (r: { StatusCode?: number }) => {
    const logs = await container
      .logs({ stdout: true, stderr: true, tail: 15 })
      .catch((err: unknown) => errorMessage(err));
    // Non-TTY logs are framed with 8-byte binary headers; drop the control bytes for a readable message.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control bytes is the point (all but \t to \r)
    const text = String(logs).replace(/[\u0000-\u0008\u000e-\u001f]/g, "");
    return `stopped with status ${r.StatusCode ?? "?"}; the end of \`docker logs ${name}\`:\n${text}`;
  });
  return { info: { containerId: container.id, containerName: name, image, log: `docker logs ${name}` }, exited };
}

/** The engine's Unix socket on this machine, or `undefined` when `DOCKER_HOST` is a TCP address. */
function dockerSocket(env: NodeJS.ProcessEnv): string | undefined {
  const host = env.DOCKER_HOST;
  if (!host) return "/var/run/docker.sock";
  return host.startsWith("unix://") ? host.slice("unix://".length) : undefined;
}
