import type Docker from "dockerode";
import { sandboxLabels } from "../docker/labels.ts";
import { DEFAULT_SANDBOX_LIMITS, type ProvisionRequest } from "../runtime.ts";

const MiB = 1024 * 1024;

/** The sandbox's named volumes on its node: its files, its harness's control folder, its inputs. */
export const VOLUME_TARGETS = { work: "/work", control: "/control", inputs: "/inputs" } as const;
export type VolumeKind = keyof typeof VOLUME_TARGETS;

/**
 * The fork point a fork child started from, on its service and its `-work` volume: the volume is
 * kept when the child closes (its changes can be compared and adopted) until its run is dropped.
 */
export const FORK_BASE_LABEL = "swarmd.base";

export function serviceNameOf(owner: string, sandboxId: string): string {
  return `swarmd-${owner}-${sandboxId}`;
}

export function volumeNameOf(owner: string, sandboxId: string, kind: VolumeKind): string {
  return `swarmd-${owner}-${sandboxId}-${kind}`;
}

/**
 * PID 1's first step, as root: every network interface but `lo` is deleted, and the sandbox does
 * not start unless `lo` is all that is left. A swarm task always gets a network (the node's
 * default bridge, when the service names none), and the swarm has no `none` network to ask for;
 * with its interfaces gone and CAP_NET_ADMIN dropped from every process after this step, nothing
 * in the sandbox can reach a network. Fails closed: a sandbox that cannot drop them never runs.
 */
const OFFLINE = [
  'for dev in $(ls /sys/class/net); do [ "$dev" = lo ] || ip link delete "$dev" || exit 97; done',
  '[ "$(ls /sys/class/net)" = lo ] || { echo "swarmd: the sandbox still has a network interface" >&2; exit 97; }',
  'exec "$@"',
].join("; ");

export interface ServiceSpecInput {
  owner: string;
  req: ProvisionRequest;
  image: string;
  /** The supervisor's command (the stream's other end), run once the network step is done. */
  command: string[];
  /** Swarm placement constraints (`node.id==…`, `node.id!=…`). */
  constraints: string[];
  /** The share of the limits reserved on the node. */
  reserve: number;
  /** The operator's network for a networked spec; absent: no network at all. */
  network?: string;
}

/**
 * One sandbox as a swarm service with one task that is never restarted: swarmd, not the swarm,
 * decides what happens to a sandbox whose container ended (a sandbox is never recreated empty).
 */
export function serviceSpec(input: ServiceSpecInput): Docker.CreateServiceOptions {
  const { owner, req } = input;
  const limits = req.limits ?? DEFAULT_SANDBOX_LIMITS;
  const labels = { ...sandboxLabels(owner, req), ...(req.fork ? { [FORK_BASE_LABEL]: req.fork.baseId } : {}) };
  const networked = req.network === true && input.network !== undefined;
  const volume = (kind: VolumeKind) => ({
    Type: "volume" as const,
    Source: volumeNameOf(owner, req.sandboxId, kind),
    Target: VOLUME_TARGETS[kind],
    VolumeOptions: { Labels: { ...labels, "swarmd.volume": kind } },
  });
  return {
    Name: serviceNameOf(owner, req.sandboxId),
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: input.image,
        Labels: labels,
        Command: networked ? input.command : ["/bin/sh", "-c", OFFLINE, "sandbox", ...input.command],
        Env: ["PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin", "HOME=/tmp"],
        Dir: VOLUME_TARGETS.work,
        User: "0:0",
        OpenStdin: true,
        TTY: false,
        Init: true,
        ReadOnly: true,
        Hostname: "sandbox",
        Mounts: [
          volume("work"),
          volume("control"),
          volume("inputs"),
          { Type: "tmpfs", Target: "/tmp", TmpfsOptions: { SizeBytes: limits.tmpMiB * MiB, Mode: 0o1777 } },
        ],
        CapabilityDrop: ["ALL"],
        // NET_ADMIN only for PID 1's network step; the supervisor's bounding set drops it.
        CapabilityAdd: [...(networked ? [] : ["CAP_NET_ADMIN"]), "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL"],
        Ulimits: [{ Name: "fsize", Soft: limits.diskMiB * MiB, Hard: limits.diskMiB * MiB }],
        StopGracePeriod: 2_000_000_000,
      } as Docker.ContainerSpec,
      Resources: {
        Limits: {
          NanoCPUs: Math.round(limits.cpus * 1e9),
          MemoryBytes: limits.memoryMiB * MiB,
          Pids: limits.pids,
        } as Docker.ResourceRequirements["Limits"],
        Reservations: {
          NanoCPUs: Math.max(1, Math.round(limits.cpus * input.reserve * 1e9)),
          MemoryBytes: Math.max(MiB, Math.round(limits.memoryMiB * input.reserve * MiB)),
        },
      },
      RestartPolicy: { Condition: "none", MaxAttempts: 0 },
      // The stream's frames are not logs: none of them is written to the node's disk.
      LogDriver: { Name: "none" },
      Placement: { Constraints: input.constraints },
      ...(networked ? { Networks: [{ Target: input.network }] } : {}),
    },
    Mode: { Replicated: { Replicas: 1 } },
  } as Docker.CreateServiceOptions;
}
