import { rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type Docker from "dockerode";
import { harnessArgv } from "../../harness/launch.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import { AS_HARNESS_USER, HARNESS_USER_SPEC, IN_CONTAINER, SANDBOX_USER } from "./container-options.ts";

const POLL_MS = 50;

/**
 * Exec the harness into the (running) container, its output to `/control/harness.out`, and
 * return the exec id. The stale socket of an earlier harness is removed first, so the socket file
 * existing later means this harness bound it.
 */
export async function execHarness(
  container: Docker.Container,
  hostControlDir: string,
  env: Record<string, string>,
): Promise<string> {
  await rm(join(hostControlDir, CONTROL_FILES.socket), { force: true });
  await rm(join(hostControlDir, CONTROL_FILES.pid), { force: true });
  const control = IN_CONTAINER.control;
  const argv = harnessArgv({
    controlDir: control,
    workDir: IN_CONTAINER.work,
    swarmdRoot: IN_CONTAINER.swarmdRoot,
    nodePath: "node",
    agentUser: SANDBOX_USER,
  });
  const script = `echo $$ > ${control}/${CONTROL_FILES.pid}; exec "$@" > ${control}/${CONTROL_FILES.output} 2>&1`;
  // Started as root, the one process of the container that holds HARNESS_CAPS, and made the harness's
  // user at once, keeping only them.
  // A container just started may not yet take an exec (the engine answers 500 "container not
  // running" while its task registers, seen under load): asked again while it says it runs.
  for (let attempt = 1; ; attempt++) {
    try {
      const exec = await container.exec({
        Cmd: [...AS_HARNESS_USER, "sh", "-c", script, "harness", ...argv],
        User: "0:0",
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: IN_CONTAINER.work,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
      });
      const answer = await exec.start({ Detach: true });
      await drained(answer);
      return exec.id;
    } catch (err) {
      const starting = attempt < 5 && /container not running/i.test(String(err));
      if (!starting || !(await container.inspect()).State.Running) throw err;
      await delay(POLL_MS * 2 ** attempt);
    }
  }
}

/** Whether the exec still runs. An exec the engine forgot (container gone, collected) does not. */
export async function execRunning(docker: Docker, execId: string | undefined): Promise<boolean> {
  if (!execId) return false;
  try {
    const info = await docker.getExec(execId).inspect();
    return info.Running;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/**
 * Kill a harness that is still starting (its pid file may not be written yet: retry until the
 * exec is over). Gives up quietly after a few seconds; the caller reports the original failure.
 */
export async function killHarness(docker: Docker, container: Docker.Container, execId: string): Promise<void> {
  const kill = `kill -KILL $(cat ${IN_CONTAINER.control}/${CONTROL_FILES.pid} 2>/dev/null) 2>/dev/null; true`;
  for (let attempt = 0; attempt < 100 && (await execRunning(docker, execId)); attempt++) {
    // As the harness's own user: root in the container has no capability to signal another user.
    await execToEnd(container, ["sh", "-c", kill], HARNESS_USER_SPEC);
    await delay(POLL_MS);
  }
}

/** Run a command to its end inside the container; resolves with its exit code. */
export async function execToEnd(container: Docker.Container, cmd: string[], user: string): Promise<number> {
  const exec = await container.exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true });
  await drained(await exec.start({ hijack: true, stdin: false }));
  const info = await exec.inspect();
  return info.ExitCode ?? -1;
}

/** Read an engine answer to its end, so its connection goes back to the pool (or closes). */
function drained(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.on("error", reject);
    stream.on("end", resolve);
    stream.on("close", resolve);
    stream.resume();
  });
}
