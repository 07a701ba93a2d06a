import { join } from "node:path";
import type Docker from "dockerode";
import { ensureHarnessBundle, HARNESS_DIR, SWARMD_ROOT } from "../../harness/launch.ts";
import type { SandboxLimits } from "../runtime.ts";

/** Where things are inside a sandbox container. */
export const IN_CONTAINER = {
  control: "/control",
  work: "/work",
  inputs: "/inputs",
  swarmdRoot: "/opt/swarmd",
  /** The only writable place besides /work (and /control): a sized tmpfs, also HOME. */
  tmp: "/tmp",
} as const;

/**
 * Who a container's processes run as: its agent's tools (and the idle init) as 65532, its harness
 * as 65533, uids no host account has (Debian gives 1000 to the first person's account; 65534 is
 * `nobody`, shared by many daemons). The agent's uid owns the sandbox's `work/`, the harness's its
 * `control/`, on the host and nothing else, so the agent can neither signal its harness nor reach
 * its socket. Every capability is dropped but the four the harness keeps (`HARNESS_CAPS`), which only
 * a process started as root inside holds, and only the harness's exec is.
 */
export const SANDBOX_USER = { uid: 65532, gid: 65532 } as const;
export const HARNESS_USER = { uid: 65533, gid: 65533 } as const;
export const HARNESS_USER_SPEC = `${HARNESS_USER.uid}:${HARNESS_USER.gid}`;

/** What the harness keeps to start its agent's tools as the agent's user and to stop them. */
export const HARNESS_CAPS = ["setuid", "setgid", "setpcap", "kill"];

/**
 * The prefix that makes a process started as root in a sandbox container the harness's user,
 * keeping only `HARNESS_CAPS` (ambient, so node has them); the agent's tools it starts drop them all.
 */
export const AS_HARNESS_USER = [
  "/usr/bin/setpriv",
  `--reuid=${HARNESS_USER.uid}`,
  `--regid=${HARNESS_USER.gid}`,
  "--clear-groups",
  `--inh-caps=-all,${HARNESS_CAPS.map((c) => `+${c}`).join(",")}`,
  `--ambient-caps=-all,${HARNESS_CAPS.map((c) => `+${c}`).join(",")}`,
  `--bounding-set=-all,${HARNESS_CAPS.map((c) => `+${c}`).join(",")}`,
  "--nnp",
  "--",
];

/** The container's own environment: nothing of the daemon's, nothing of the spec's (see below). */
const BASE_ENV = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin", `HOME=${IN_CONTAINER.tmp}`];

/**
 * PID 1 of every sandbox. The container runs from provision on, idle, and the harness is `exec`ed
 * into it by startHarness. Why not make the harness the container's command: the port's
 * provision must not start the harness, yet freeze/thaw and fork (which pauses the live parent
 * while it copies its /work) need a container that exists and may be paused; an idle init gives
 * every call the same running container, and the harness's lifetime is tracked by its exec id,
 * which a restarted service finds again in the sandbox record. `Init` adds docker-init as PID 1
 * so the agent's orphaned processes are reaped.
 */
const IDLE_COMMAND = ["sleep", "infinity"];

/**
 * The container starts as root so that an exec started as root (the harness's, and only it) gets
 * `HARNESS_CAPS`: the engine gives an exec the capabilities its container's user would have. Its
 * idle command turns into the agent's user with no capability at once.
 */
const AS_AGENT = [
  "/usr/bin/setpriv",
  `--reuid=${SANDBOX_USER.uid}`,
  `--regid=${SANDBOX_USER.gid}`,
  "--clear-groups",
  "--inh-caps=-all",
  "--bounding-set=-all",
  "--nnp",
  "--",
];

export interface ContainerOptionsInput {
  name: string;
  image: string;
  labels: Record<string, string>;
  /** Host folders of the sandbox, mounted at /control, /work and /inputs (read-only). */
  controlDir: string;
  workDir: string;
  inputsDir: string;
  limits: SandboxLimits;
}

export const MiB = 1024 * 1024;

export function containerOptions(input: ContainerOptionsInput): Docker.ContainerCreateOptions {
  return {
    name: input.name,
    Image: input.image,
    Cmd: [...AS_AGENT, ...IDLE_COMMAND],
    Entrypoint: [],
    User: "0:0",
    WorkingDir: IN_CONTAINER.work,
    Env: BASE_ENV,
    Labels: input.labels,
    HostConfig: {
      Init: true,
      // Always none: a networked sandbox gets slirp4netns in this namespace (src/sandbox/network/user-net.ts).
      NetworkMode: "none",
      // Only the harness's own files of the installation, never its root (the default data folder
      // lives there) nor anything else of it. The sandbox's folders are its only writable mounts.
      Binds: [
        `${input.controlDir}:${IN_CONTAINER.control}`,
        `${input.workDir}:${IN_CONTAINER.work}`,
        `${input.inputsDir}:${IN_CONTAINER.inputs}:ro`,
        // The built harness: a rebuild renames new files over these, which a harness that started
        // before it does not see (its boot opened the files it needs at its start).
        `${ensureHarnessBundle()}:${join(IN_CONTAINER.swarmdRoot, HARNESS_DIR)}:ro`,
        `${join(SWARMD_ROOT, "node_modules")}:${join(IN_CONTAINER.swarmdRoot, "node_modules")}:ro`,
      ],
      ReadonlyRootfs: true,
      Tmpfs: { [IN_CONTAINER.tmp]: `rw,nosuid,nodev,size=${input.limits.tmpMiB}m,mode=1777` },
      CapDrop: ["ALL"],
      CapAdd: HARNESS_CAPS.map((cap) => `CAP_${cap.toUpperCase()}`),
      SecurityOpt: ["no-new-privileges"],
      Memory: input.limits.memoryMiB * MiB,
      // Equal to Memory: no swap on top of it (the tmpfs counts in it too).
      MemorySwap: input.limits.memoryMiB * MiB,
      PidsLimit: input.limits.pids,
      NanoCpus: Math.round(input.limits.cpus * 1e9),
      // No single file larger than the disk quota; the disk watch (src/sandbox/disk-watch.ts) counts the sum.
      Ulimits: [{ Name: "fsize", Soft: input.limits.diskMiB * MiB, Hard: input.limits.diskMiB * MiB }],
      RestartPolicy: { Name: "no" },
    },
  };
}
