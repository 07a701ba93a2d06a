import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { errorMessage } from "../src/errors.ts";
import { SWARMD_ROOT } from "../src/harness/launch.ts";
import { openEngine, pingEngine } from "../src/sandbox/docker/engine.ts";

const run = promisify(execFile);

/** Label on everything the raw-CLI baseline creates, so the clean-up finds it all. */
const BENCH_LABEL = "swarmd.bench";

/**
 * The raw `docker` CLI doing what the docker runtime does, one CLI process per engine call: the
 * baseline the sandbox benchmark divides by. Containers get the runtime's flags (no network, init,
 * limits, the control folder and the swarmd tree bind-mounted) so only the runtime's own overhead
 * differs.
 */
export interface DockerCli {
  /** `docker create` + `docker start` of `image` idling in `sleep infinity`; the container id. */
  provision(image?: string): Promise<string>;
  /** `docker create` + `docker start -a` of the image running `node -e 0`, to its end; the (exited) container's id. */
  runNode(): Promise<string>;
  /** `docker commit` of a live container, then provision from that image; container and image. */
  fork(parentId: string): Promise<{ containerId: string; image: string }>;
  pause(containerId: string): Promise<void>;
  unpause(containerId: string): Promise<void>;
  /** `docker rm -f`, then `docker rmi` of the fork image when there is one. */
  close(containerId: string, image?: string): Promise<void>;
  /** Remove every container and image this baseline made. */
  cleanUp(): Promise<void>;
}

async function docker(args: string[]): Promise<string> {
  const { stdout } = await run("docker", args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** Why docker rows cannot run here, or undefined when engine, image and CLI are all there. */
export async function dockerUnusable(image: string): Promise<string | undefined> {
  try {
    await pingEngine();
    await openEngine().docker.getImage(image).inspect();
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    return status === 404 ? `image ${image} is missing (make sandbox-image)` : errorMessage(err);
  }
  return dockerCliUnusable();
}

/** Why the raw CLI cannot be used (no binary, no engine), or undefined when it can. */
export async function dockerCliUnusable(): Promise<string | undefined> {
  try {
    await docker(["version", "--format", "{{.Server.Version}}"]);
    return undefined;
  } catch (err) {
    const text = `${(err as { stderr?: string }).stderr ?? (err as Error).message}`.trim().split("\n")[0];
    return `the docker CLI cannot reach an engine: ${text}`;
  }
}

export function createDockerCli(options: { image: string; scratchDir: string; tag: string }): DockerCli {
  const label = `${BENCH_LABEL}=${options.tag}`;
  const forkRepo = `swarmd-bench-fork-${options.tag}`;
  let made = 0;

  const create = async (image: string, command: string[]): Promise<string> => {
    const control = join(options.scratchDir, `cli-${made++}`);
    mkdirSync(control, { recursive: true });
    return docker([
      "create",
      "--label",
      label,
      "--network",
      "none",
      "--init",
      "--memory",
      String(2 * 1024 ** 3),
      "--pids-limit",
      "1024",
      "--security-opt",
      "no-new-privileges",
      "--entrypoint",
      "",
      "-v",
      `${control}:/control`,
      "-v",
      `${SWARMD_ROOT}:/opt/swarmd:ro`,
      image,
      ...command,
    ]);
  };
  const provision = async (image = options.image): Promise<string> => {
    const id = await create(image, ["sleep", "infinity"]);
    await docker(["start", id]);
    return id;
  };

  return {
    provision,
    async runNode() {
      const id = await create(options.image, ["node", "-e", "0"]);
      await docker(["start", "--attach", id]);
      return id;
    },
    async fork(parentId) {
      const image = `${forkRepo}:${made}`;
      await docker(["commit", parentId, image]);
      return { containerId: await provision(image), image };
    },
    pause: async (id) => void (await docker(["pause", id])),
    unpause: async (id) => void (await docker(["unpause", id])),
    async close(id, image) {
      await docker(["rm", "-f", id]);
      if (image !== undefined) await docker(["rmi", image]);
    },
    async cleanUp() {
      const ids = (await docker(["ps", "-aq", "--filter", `label=${label}`]).catch(() => ""))
        .split("\n")
        .filter(Boolean);
      if (ids.length > 0) await docker(["rm", "-f", ...ids]).catch(() => "");
      const images = (await docker(["images", "-q", forkRepo]).catch(() => "")).split("\n").filter(Boolean);
      if (images.length > 0) await docker(["rmi", "-f", ...new Set(images)]).catch(() => "");
    },
  };
}
