import type Docker from "dockerode";
import { SWARMD_ROOT } from "../../harness/launch.ts";

/** Where things are inside a sandbox container. */
export const IN_CONTAINER = {
  control: "/control",
  work: "/work",
  inputs: "/inputs",
  swarmdRoot: "/opt/swarmd",
  home: "/home/agent",
} as const;

/** The container's own environment: nothing of the daemon's, nothing of the spec's (see below). */
const BASE_ENV = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin", `HOME=${IN_CONTAINER.home}`];

/**
 * PID 1 of every sandbox. The container runs from provision on, idle, and the harness is `exec`ed
 * into it by startHarness. Why not make the harness the container's command: the port's
 * provision must not start the harness, yet freeze/thaw, fork (a commit of the live parent) and
 * writeInputs all need a container that exists and may be paused; an idle init gives every call
 * the same running container, and the harness's lifetime is tracked by its exec id, which a
 * restarted service finds again in the sandbox record. `Init` adds docker-init as PID 1 so the
 * agent's orphaned processes are reaped.
 */
const IDLE_COMMAND = ["sleep", "infinity"];

export interface ContainerOptionsInput {
  name: string;
  image: string;
  labels: Record<string, string>;
  controlDir: string;
  network: boolean;
  memoryBytes: number;
  pidsLimit: number;
  /** `uid:gid` the agent runs as: the service's own, so it can use the socket and remove files. */
  user: string;
}

export function containerOptions(input: ContainerOptionsInput): Docker.ContainerCreateOptions {
  return {
    name: input.name,
    Image: input.image,
    Cmd: IDLE_COMMAND,
    Entrypoint: [],
    User: input.user,
    WorkingDir: IN_CONTAINER.work,
    Env: BASE_ENV,
    Labels: input.labels,
    HostConfig: {
      Init: true,
      NetworkMode: input.network ? "bridge" : "none",
      Binds: [`${input.controlDir}:${IN_CONTAINER.control}`, `${SWARMD_ROOT}:${IN_CONTAINER.swarmdRoot}:ro`],
      Memory: input.memoryBytes,
      PidsLimit: input.pidsLimit,
      SecurityOpt: ["no-new-privileges"],
      RestartPolicy: { Name: "no" },
    },
  };
}
